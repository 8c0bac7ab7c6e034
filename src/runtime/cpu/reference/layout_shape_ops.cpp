// Reference kernels for the shape producers: Shape, Size, ConstantOfShape, Range. Inference has
// already sized (and bounded) every output; the kernels only fill it.
#include <type_traits>

#include "ir/dtype_dispatch.h"
#include "ir/layout_rules.h"
#include "runtime/cpu/reference/layout_family.h"

namespace gf::ref::layout {

namespace {

using gf::layout::resolve_shape_range;
using gf::layout::ShapeRange;

void shape(const KernelArgs& a) {
  const std::vector<int64_t>& dims = a.inputs[0].dims();
  const int64_t r = static_cast<int64_t>(dims.size());
  const ShapeRange range =
      resolve_shape_range(r, a.attrs().get_int("start", 0), a.attrs().get_int("end", r));
  int64_t* out = a.outputs[0].data<int64_t>();
  for (int64_t i = range.start; i < range.end; ++i)
    out[i - range.start] = dims[static_cast<size_t>(i)];
}

void size(const KernelArgs& a) {
  *a.outputs[0].data<int64_t>() = a.inputs[0].numel();
}

void constant_of_shape(const KernelArgs& a) {
  const Tensor* value = a.attrs().get_tensor("value");
  if (value == nullptr) return;  // f32 zeros, as allocated
  Tensor& y = a.outputs[0];
  for (int64_t i = 0; i < y.numel(); ++i) copy_element(y, i, *value, 0);
}

template <class C, class T>
void fill_range(T* out, int64_t n, C start, C delta) {
  for (int64_t i = 0; i < n; ++i) {
    out[i] = T(static_cast<ComputeType<T>>(start + static_cast<C>(i) * delta));
  }
}

// output[i] = start + i * delta, as ONNX's reference computes it: f32 and f64 in double, rounded
// once; f16/bf16 in the stash type (f32 by default); integers through uint64, which wraps
// exactly because every true value lies between start and limit.
void range(const KernelArgs& a) {
  Tensor& y = a.outputs[0];
  const bool stash_f32 = a.attrs().get_int("stash_type", 1) == 1;
  visit_dtype(y.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = y.data<T>();
    const int64_t n = y.numel();
    if constexpr (kIsFloat<T>) {
      const double start = a.inputs[0].element_as_double(0);
      const double delta = a.inputs[2].element_as_double(0);
      if (!std::is_same_v<ComputeType<T>, T> && stash_f32) {
        fill_range<float>(out, n, static_cast<float>(start), static_cast<float>(delta));
      } else {
        fill_range<double>(out, n, start, delta);
      }
    } else {
      const uint64_t start = static_cast<uint64_t>(a.inputs[0].element_as_int(0));
      const uint64_t delta = static_cast<uint64_t>(a.inputs[2].element_as_int(0));
      for (int64_t i = 0; i < n; ++i) {
        out[i] = static_cast<T>(static_cast<int64_t>(start + static_cast<uint64_t>(i) * delta));
      }
    }
  });
}

}  // namespace

void register_shape_producer_kernels(KernelTable& table) {
  table[static_cast<size_t>(Op::kShape)] = shape;
  table[static_cast<size_t>(Op::kSize)] = size;
  table[static_cast<size_t>(Op::kConstantOfShape)] = constant_of_shape;
  table[static_cast<size_t>(Op::kRange)] = range;
}

}  // namespace gf::ref::layout
