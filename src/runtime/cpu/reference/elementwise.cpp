// Reference kernels for the elementwise and broadcast op family.
#include <algorithm>
#include <cstring>

#include "ir/dtype_dispatch.h"
#include "runtime/cpu/reference/kernels.h"
#include "runtime/cpu/reference/ref_util.h"

namespace gf::ref {

namespace {

template <class F>
void unary_map(const KernelArgs& a, F f) {
  visit_dtype(a.inputs[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const T* x = a.inputs[0].data<T>();
    T* y = a.outputs[0].data<T>();
    for (int64_t i = 0; i < a.inputs[0].numel(); ++i) y[i] = T(f(static_cast<C>(x[i])));
  });
}

template <class F>
void binary_map(const KernelArgs& a, F f) {
  const Tensor& x = a.inputs[0];
  const Tensor& y = a.inputs[1];
  Tensor& out = a.outputs[0];
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const T* px = x.data<T>();
    const T* py = y.data<T>();
    T* po = out.data<T>();
    MultiIndex it(out.dims(), {broadcast_strides(x.dims(), out.dims()),
                               broadcast_strides(y.dims(), out.dims())});
    for (int64_t i = 0; i < out.numel(); ++i, it.next()) {
      po[i] = T(f(static_cast<C>(px[it.offset(0)]), static_cast<C>(py[it.offset(1)])));
    }
  });
}

void identity(const KernelArgs& a) {
  if (a.inputs[0].nbytes()) std::memcpy(a.outputs[0].raw(), a.inputs[0].raw(), a.inputs[0].nbytes());
}

void relu(const KernelArgs& a) {
  unary_map(a, [](auto x) { return x > decltype(x)(0) ? x : decltype(x)(0); });
}

void add(const KernelArgs& a) {
  binary_map(a, [](auto x, auto y) { return static_cast<decltype(x)>(x + y); });
}

}  // namespace

void register_elementwise_kernels(KernelTable& table) {
  table[static_cast<size_t>(Op::kIdentity)] = identity;
  table[static_cast<size_t>(Op::kRelu)] = relu;
  table[static_cast<size_t>(Op::kAdd)] = add;
}

}  // namespace gf::ref
