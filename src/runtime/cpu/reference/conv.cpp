// Reference Conv: im2col + one GEMM per (image, group), any number of spatial axes; NhwcConv
// as Conv between transposes.
#include <cstring>

#include "ir/tensor_transpose.h"
#include "runtime/cpu/reference/linear_family.h"

namespace gf::ref {

namespace {

void conv(const KernelArgs& args) {
  const Tensor& x = args.inputs[0];
  const Tensor& wt = args.inputs[1];
  Tensor& y = args.outputs[0];
  const Windows win = resolve_windows(args.attrs(), x.dims(),
                                      std::vector<int64_t>(wt.dims().begin() + 2, wt.dims().end()),
                                      /*pool=*/false);
  const int64_t batch = x.dims()[0], channels = x.dims()[1], filters = wt.dims()[0];
  const int64_t group = args.attrs().get_int("group", 1);
  const int64_t group_channels = channels / group, group_filters = filters / group;
  const auto n_taps = static_cast<int64_t>(win.num_taps());
  const auto n_pos = static_cast<int64_t>(win.num_positions());
  const int64_t col_rows = group_channels * n_taps;
  const int64_t image_size = checked_numel(win.in_spatial);

  visit_float_dtype(x.dtype(), "Conv", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const auto xv = to_compute<T>(x);
    const auto wv = to_compute<T>(wt);
    std::vector<C> yv(static_cast<size_t>(y.numel()));
    std::vector<C> col(static_cast<size_t>(col_rows * n_pos));
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t g = 0; g < group; ++g) {
        // col[c * taps + t, p] = the input under tap t of window p (0 in the padding).
        for (int64_t c = 0; c < group_channels; ++c) {
          const C* image = xv.data() + (n * channels + g * group_channels + c) * image_size;
          for (int64_t t = 0; t < n_taps; ++t) {
            C* row = col.data() + (c * n_taps + t) * n_pos;
            for (int64_t p = 0; p < n_pos; ++p) {
              const int64_t at = win.input_offset(static_cast<size_t>(p), static_cast<size_t>(t));
              row[p] = at < 0 ? C(0) : image[at];
            }
          }
        }
        // Y[n, group g] (group_filters x positions) = W[group g] (group_filters x col_rows) * col.
        gemm(args, false, false, group_filters, n_pos, col_rows,
             wv.data() + g * group_filters * col_rows, col.data(),
             yv.data() + (n * filters + g * group_filters) * n_pos);
      }
    }
    if (args.has_input(2)) {
      const auto bias = to_compute<T>(args.inputs[2]);
      for (int64_t n = 0; n < batch; ++n) {
        for (int64_t f = 0; f < filters; ++f) {
          C* plane = yv.data() + (n * filters + f) * n_pos;
          for (int64_t p = 0; p < n_pos; ++p) plane[p] += bias[static_cast<size_t>(f)];
        }
      }
    }
    store<T>(yv, y);
  });
}

// NhwcConv: X and W moved to channels first, Conv, Y moved back to channels last.
void nhwc_conv(const KernelArgs& args) {
  const auto rank = static_cast<int64_t>(args.inputs[0].rank());
  std::vector<int64_t> to_first{0, rank - 1}, to_last{0};
  for (int64_t i = 1; i + 1 < rank; ++i) to_first.push_back(i);
  for (int64_t i = 2; i < rank; ++i) to_last.push_back(i);
  to_last.push_back(1);
  std::vector<Tensor> inputs{transpose_tensor(args.inputs[0], to_first),
                             transpose_tensor(args.inputs[1], to_first)};
  if (args.has_input(2)) inputs.push_back(args.inputs[2]);
  std::vector<int64_t> y_dims;
  for (int64_t axis : to_first) y_dims.push_back(args.outputs[0].dims()[static_cast<size_t>(axis)]);
  std::vector<Tensor> outputs{Tensor(args.outputs[0].dtype(), y_dims)};
  conv(KernelArgs{args.node, inputs, outputs});
  const Tensor y = transpose_tensor(outputs[0], to_last);
  std::memcpy(args.outputs[0].raw(), y.raw(), y.nbytes());
}

}  // namespace

void register_conv_kernels(KernelTable& table) {
  table[static_cast<size_t>(Op::kConv)] = conv;
  table[static_cast<size_t>(Op::kNhwcConv)] = nhwc_conv;
}

}  // namespace gf::ref
