// Reference BatchNormalization, inference form: Y = (X - mean) / sqrt(var + epsilon) * scale + B
// per channel (dim 1), in X's compute type; the per-channel inputs may have their own float
// dtypes (ONNX's T1 / T2).
#include <cmath>

#include "runtime/cpu/reference/linear_family.h"

namespace gf::ref {

namespace {

void batch_norm(const KernelArgs& args) {
  const Tensor& x = args.inputs[0];
  Tensor& y = args.outputs[0];
  const int64_t batch = x.dims()[0], channels = x.dims()[1];
  const int64_t inner = batch * channels == 0 ? 0 : x.numel() / (batch * channels);
  const float epsilon = args.attrs().get_float("epsilon", 1e-5f);
  visit_float_dtype(x.dtype(), "BatchNormalization", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const T* in = x.data<T>();
    T* out = y.data<T>();
    for (int64_t c = 0; c < channels; ++c) {
      const auto param = [&](size_t i) {
        return static_cast<C>(args.inputs[i].element_as_double(c));
      };
      const C scale = param(1), bias = param(2), mean = param(3);
      const C stddev = std::sqrt(param(4) + static_cast<C>(epsilon));
      for (int64_t n = 0; n < batch; ++n) {
        const int64_t base = (n * channels + c) * inner;
        for (int64_t i = 0; i < inner; ++i) {
          out[base + i] = T((static_cast<C>(in[base + i]) - mean) / stddev * scale + bias);
        }
      }
    }
  });
}

}  // namespace

void register_batch_norm_kernels(KernelTable& table) {
  table[static_cast<size_t>(Op::kBatchNormalization)] = batch_norm;
}

}  // namespace gf::ref
