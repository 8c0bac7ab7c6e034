// Reference GatherND (ONNX opset 13): for each batch (the first batch_dims axes, shared by data
// and indices) and each k-tuple in the last axis of indices, copy the slice of data that the
// tuple addresses on axes [batch_dims, batch_dims + k). Slices are contiguous, so each is one
// memcpy of bytes and every dtype is served alike.
#include "runtime/cpu/reference/gather_nd.h"

#include "runtime/cpu/reference/layout_family.h"
#include "runtime/cpu/reference/ref_util.h"

namespace gf::ref::layout {

namespace {

void gather_nd(const KernelArgs& a) {
  const Tensor& data = a.inputs[0];
  const Tensor& indices = a.inputs[1];
  Tensor& y = a.outputs[0];
  const std::vector<int64_t>& dims = data.dims();
  const size_t r = dims.size();
  const size_t q = indices.rank();
  const auto b = static_cast<size_t>(a.attrs().get_int("batch_dims", 0));
  const auto k = static_cast<size_t>(indices.dims()[q - 1]);

  const std::vector<int64_t> strides = contiguous_strides(dims);
  const int64_t batches = product(dims, 0, b);
  const int64_t batch_stride = product(dims, b, r);  // elements of data per batch
  const int64_t tuples_per_batch = product(indices.dims(), b, q - 1);
  const size_t slice_bytes =
      static_cast<size_t>(product(dims, b + k, r)) * dtype_size(data.dtype());

  for (int64_t batch = 0; batch < batches; ++batch) {
    for (int64_t t = 0; t < tuples_per_batch; ++t) {
      const int64_t tuple = batch * tuples_per_batch + t;
      int64_t from = batch * batch_stride;
      for (size_t j = 0; j < k; ++j) {
        const size_t axis = b + j;
        const int64_t flat = tuple * static_cast<int64_t>(k) + static_cast<int64_t>(j);
        from += checked_index(a, indices, flat, dims[axis], axis) * strides[axis];
      }
      std::memcpy(bytes_of(y) + static_cast<size_t>(tuple) * slice_bytes,
                  bytes_of(data) + static_cast<size_t>(from) * dtype_size(data.dtype()),
                  slice_bytes);
    }
  }
}

}  // namespace

void register_gather_nd_kernel(KernelTable& table) {
  table[static_cast<size_t>(Op::kGatherND)] = gather_nd;
}

}  // namespace gf::ref::layout
