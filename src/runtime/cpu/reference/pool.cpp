// Reference MaxPool, AveragePool, GlobalMaxPool and GlobalAveragePool over any number of spatial
// axes. Padding never takes part in a max; an average divides by the taps inside the input, or
// with count_include_pad by the taps inside the padded input (a ceil_mode overhang beyond the
// end padding never counts, as in ONNX Runtime and PyTorch). A NaN in a window makes its max NaN.
// Averages are summed in double.
#include <cmath>

#include "runtime/cpu/reference/linear_family.h"

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

// Runs `reduce(channel_input, position) -> ComputeType` for every (image, channel) plane and
// output position of X [N, C, spatial...].
template <class T, class Reduce>
void for_each_window(const KernelArgs& args, int64_t positions, Reduce reduce) {
  const Tensor& x = args.inputs[0];
  Tensor& y = args.outputs[0];
  const int64_t planes = x.dims()[0] * x.dims()[1];
  const int64_t plane_size = planes == 0 ? 0 : x.numel() / planes;
  const T* in = x.data<T>();
  T* out = y.data<T>();
  for (int64_t c = 0; c < planes; ++c) {
    for (int64_t p = 0; p < positions; ++p) {
      out[c * positions + p] = T(reduce(in + c * plane_size, static_cast<size_t>(p)));
    }
  }
}

// max(best, v) where a NaN on either side wins.
template <class C>
C nan_max(C best, C v) {
  if (is_nan(best)) return best;
  return is_nan(v) || v > best ? v : best;
}

void max_pool(const KernelArgs& args) {
  const Windows win =
      resolve_windows(args.attrs(), args.inputs[0].dims(), args.attrs().get_ints("kernel_shape"),
                      /*pool=*/true);
  visit_dtype(args.inputs[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    for_each_window<T>(args, static_cast<int64_t>(win.num_positions()),
                       [&](const T* plane, size_t p) {
                         // Inference guarantees every window has a tap inside the input.
                         C best{};
                         bool seen = false;
                         for (size_t t = 0; t < win.num_taps(); ++t) {
                           const int64_t at = win.input_offset(p, t);
                           if (at < 0) continue;
                           const C v = static_cast<C>(plane[at]);
                           best = seen ? nan_max(best, v) : v;
                           seen = true;
                         }
                         return best;
                       });
  });
}

void average_pool(const KernelArgs& args) {
  const Windows win =
      resolve_windows(args.attrs(), args.inputs[0].dims(), args.attrs().get_ints("kernel_shape"),
                      /*pool=*/true);
  const bool count_pad = args.attrs().get_int("count_include_pad", 0) != 0;
  visit_float_dtype(args.inputs[0].dtype(), "AveragePool", [&](auto tag) {
    using T = typename decltype(tag)::type;
    for_each_window<T>(args, static_cast<int64_t>(win.num_positions()),
                       [&](const T* plane, size_t p) {
                         double sum = 0.0;
                         int64_t count = 0;
                         for (size_t t = 0; t < win.num_taps(); ++t) {
                           const int64_t at = win.input_offset(p, t);
                           if (at >= 0) sum += static_cast<double>(plane[at]);
                           if (at >= 0 || (count_pad && win.in_padded_input(p, t))) ++count;
                         }
                         return static_cast<ComputeType<T>>(sum / static_cast<double>(count));
                       });
  });
}

// The global pools: one window covering each whole plane.
void global_pool(const KernelArgs& args) {
  const bool is_max = args.node.op == Op::kGlobalMaxPool;
  const Tensor& x = args.inputs[0];
  const int64_t planes = x.dims()[0] * x.dims()[1];
  const int64_t plane_size = planes == 0 ? 0 : x.numel() / planes;
  visit_float_dtype(x.dtype(), "global pool", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    for_each_window<T>(args, 1, [&](const T* plane, size_t) {
      if (is_max) {  // inference rejects empty planes
        C best = static_cast<C>(plane[0]);
        for (int64_t i = 1; i < plane_size; ++i) best = nan_max(best, static_cast<C>(plane[i]));
        return best;
      }
      double sum = 0.0;
      for (int64_t i = 0; i < plane_size; ++i) sum += static_cast<double>(plane[i]);
      return static_cast<C>(sum / static_cast<double>(plane_size));  // 0/0 = NaN when empty
    });
  });
}

}  // namespace

void register_pool_kernels(KernelTable& table) {
  table[static_cast<size_t>(Op::kMaxPool)] = max_pool;
  table[static_cast<size_t>(Op::kAveragePool)] = average_pool;
  table[static_cast<size_t>(Op::kGlobalMaxPool)] = global_pool;
  table[static_cast<size_t>(Op::kGlobalAveragePool)] = global_pool;
}

}  // namespace gf::ref
