// Reference kernels for the reduction op family: ArgMax, ArgMin and CumSum here; the Reduce*
// ops in reduce.cpp; softmax and the normalizations in normalization.cpp.
#include <cmath>
#include <type_traits>

#include "runtime/cpu/reference/kernels.h"
#include "runtime/cpu/reference/reduction_family.h"

namespace gf::ref {

namespace {

template <class C>
bool is_nan(C v) {
  if constexpr (std::is_floating_point_v<C>) {
    return std::isnan(v);
  } else {
    return false;
  }
}

// Whether `v`, met after `best` in the scan, becomes the new extreme. As in numpy, the first
// NaN is the extreme; select_last_index (ONNX: argmax of the reversed axis) makes it the last
// NaN, and the last of equal extremes.
template <class C>
bool replaces(C v, C best, bool want_max, bool select_last) {
  if (is_nan(best)) return select_last && is_nan(v);
  if (is_nan(v)) return true;
  if (v == best) return select_last;
  return want_max ? v > best : v < best;
}

void arg_extreme(const KernelArgs& a) {
  const Tensor& x = a.inputs[0];
  const bool want_max = a.node.op == Op::kArgMax;
  const bool select_last = a.attrs().get_int("select_last_index", 0) != 0;
  const AxisSplit s = split_at_axis(x.dims(), kernel_axis(a.attrs().get_int("axis", 0), x.rank()));
  int64_t* y = a.outputs[0].data<int64_t>();
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const T* px = x.data<T>();
    for (int64_t o = 0; o < s.outer; ++o) {
      for (int64_t i = 0; i < s.inner; ++i) {
        int64_t best = 0;  // inference rejects an empty axis
        C best_v = static_cast<C>(px[s.at(o, 0, i)]);
        for (int64_t k = 1; k < s.len; ++k) {
          const C v = static_cast<C>(px[s.at(o, k, i)]);
          if (replaces(v, best_v, want_max, select_last)) {
            best = k;
            best_v = v;
          }
        }
        y[o * s.inner + i] = best;
      }
    }
  });
}

void cumsum(const KernelArgs& a) {
  const Tensor& x = a.inputs[0];
  const bool exclusive = a.attrs().get_int("exclusive", 0) != 0;
  const bool reverse = a.attrs().get_int("reverse", 0) != 0;
  const AxisSplit s = split_at_axis(x.dims(), kernel_axis(a.inputs[1].element_as_int(0), x.rank()));
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    T* py = a.outputs[0].data<T>();
    for (int64_t o = 0; o < s.outer; ++o) {
      for (int64_t i = 0; i < s.inner; ++i) {
        Accum<T> acc = 0;
        for (int64_t step = 0; step < s.len; ++step) {
          const int64_t at = s.at(o, reverse ? s.len - 1 - step : step, i);
          if (exclusive) py[at] = narrow<T>(acc);
          acc = accum_add(acc, widen<T>(px[at]));
          if (!exclusive) py[at] = narrow<T>(acc);
        }
      }
    }
  });
}

}  // namespace

void register_reduction_kernels(KernelTable& table) {
  register_reduce_kernels(table);
  table[static_cast<size_t>(Op::kArgMax)] = arg_extreme;
  table[static_cast<size_t>(Op::kArgMin)] = arg_extreme;
  table[static_cast<size_t>(Op::kCumSum)] = cumsum;
  register_normalization_kernels(table);
}

}  // namespace gf::ref
