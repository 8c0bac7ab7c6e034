// Reference kernels for the variadic broadcast ops Min, Max, Sum and Mean: any number of
// inputs, all broadcast together, folded left to right in the compute type.
#include <limits>

#include "runtime/cpu/reference/elementwise_family.h"

namespace gf::ref {

namespace {

// out = finish(combine(...combine(x0, x1)..., xn)); one rounding to the storage type at the end.
template <class Combine, class Finish>
void fold_inputs(const KernelArgs& a, Combine combine, Finish finish) {
  visit_numeric_dtype(a.inputs[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    std::vector<const Tensor*> inputs;
    std::vector<const T*> data;
    for (const Tensor& t : a.inputs) {
      inputs.push_back(&t);
      data.push_back(t.data<T>());
    }
    T* out = a.outputs[0].data<T>();
    for_each_broadcast(a.outputs[0], inputs, [&](int64_t i, const MultiIndex& it) {
      C acc = static_cast<C>(data[0][it.offset(0)]);
      for (size_t k = 1; k < data.size(); ++k) {
        acc = combine(acc, static_cast<C>(data[k][it.offset(k)]));
      }
      out[i] = static_cast<T>(finish(acc));
    });
  });
}

auto no_finish = [](auto acc) { return acc; };

// NaN propagates: once the running value is NaN, no comparison replaces it.
void min(const KernelArgs& a) {
  fold_inputs(
      a, [](auto acc, auto v) { return is_nan_c(v) || v < acc ? v : acc; }, no_finish);
}

void max(const KernelArgs& a) {
  fold_inputs(
      a, [](auto acc, auto v) { return is_nan_c(v) || v > acc ? v : acc; }, no_finish);
}

void sum(const KernelArgs& a) {
  fold_inputs(
      a, [](auto acc, auto v) { return add_c(acc, v); }, no_finish);
}

void mean(const KernelArgs& a) {
  const auto n = static_cast<double>(a.inputs.size());
  fold_inputs(
      a, [](auto acc, auto v) { return add_c(acc, v); },
      [n](auto acc) { return static_cast<decltype(acc)>(acc / static_cast<decltype(acc)>(n)); });
}

}  // namespace

void register_variadic_kernels(KernelTable& table) {
  set_kernel(table, Op::kMin, min);
  set_kernel(table, Op::kMax, max);
  set_kernel(table, Op::kSum, sum);
  set_kernel(table, Op::kMean, mean);
}

}  // namespace gf::ref
