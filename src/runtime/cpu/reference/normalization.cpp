// Reference kernels for Softmax, LogSoftmax, LayerNormalization and RMSNormalization. All
// statistics are computed in double, whatever stash_type asks of a backend.
#include <cmath>
#include <limits>
#include <vector>

#include "runtime/cpu/reference/reduction_family.h"
#include "runtime/cpu/reference/ref_util.h"

namespace gf::ref {

namespace {

// Softmax along one axis (opset 13), with the row max subtracted first. A row holding +inf or
// only -inf yields NaN (inf - inf), as the ONNX reference does.
void softmax(const KernelArgs& a) {
  const Tensor& x = a.inputs[0];
  const bool log = a.node.op == Op::kLogSoftmax;
  const AxisSplit s = split_at_axis(x.dims(), kernel_axis(a.attrs().get_int("axis", -1), x.rank()));
  visit_float_dtype(x.dtype(), "Softmax", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    T* py = a.outputs[0].data<T>();
    for (int64_t o = 0; o < s.outer; ++o) {
      for (int64_t i = 0; i < s.inner; ++i) {
        double m = -std::numeric_limits<double>::infinity();
        for (int64_t k = 0; k < s.len; ++k) m = max_nan(m, widen<T>(px[s.at(o, k, i)]));
        double sum = 0.0;
        for (int64_t k = 0; k < s.len; ++k) sum += std::exp(widen<T>(px[s.at(o, k, i)]) - m);
        for (int64_t k = 0; k < s.len; ++k) {
          const double shifted = widen<T>(px[s.at(o, k, i)]) - m;
          py[s.at(o, k, i)] = narrow<T>(log ? shifted - std::log(sum) : std::exp(shifted) / sum);
        }
      }
    }
  });
}

// The elements of a scale or bias tensor laid out over the normalized dims, one per element of
// a row. Inference guarantees it broadcasts there; dims beyond the row's rank are all 1.
std::vector<double> broadcast_row(const Tensor& t, const std::vector<int64_t>& row_dims) {
  std::vector<int64_t> dims = t.dims();
  if (dims.size() > row_dims.size())
    dims.erase(dims.begin(), dims.end() - static_cast<ptrdiff_t>(row_dims.size()));
  const int64_t n = checked_numel(row_dims);
  std::vector<double> row(static_cast<size_t>(n));
  MultiIndex it(row_dims, {broadcast_strides(dims, row_dims)});
  for (int64_t j = 0; j < n; ++j, it.next())
    row[static_cast<size_t>(j)] = t.element_as_double(it.offset(0));
  return row;
}

// X seen as [rows, n]: n spans the normalized dims [axis, rank).
struct NormRows {
  int64_t rows = 1;
  int64_t n = 1;
  std::vector<int64_t> row_dims;
};

NormRows norm_rows(const KernelArgs& a) {
  const Tensor& x = a.inputs[0];
  const int64_t axis = kernel_axis(a.attrs().get_int("axis", -1), x.rank());
  NormRows r;
  r.row_dims.assign(x.dims().begin() + axis, x.dims().end());
  for (int64_t d = 0; d < axis; ++d) r.rows *= x.dims()[static_cast<size_t>(d)];
  r.n = checked_numel(r.row_dims);
  return r;
}

// Y = (X - mean) / sqrt(var + epsilon) * Scale + B per row; Mean and InvStdDev (float32) when
// the node has those outputs. An empty row gives NaN statistics (0/0), like numpy.
void layer_norm(const KernelArgs& a) {
  const Tensor& x = a.inputs[0];
  const NormRows r = norm_rows(a);
  const double eps = a.attrs().get_float("epsilon", 1e-5f);
  const std::vector<double> scale = broadcast_row(a.inputs[1], r.row_dims);
  const std::vector<double> bias = a.has_input(2) ? broadcast_row(a.inputs[2], r.row_dims)
                                                  : std::vector<double>(scale.size(), 0.0);
  float* mean_out = a.outputs.size() > 1 ? a.outputs[1].data<float>() : nullptr;
  float* inv_std_out = a.outputs.size() > 2 ? a.outputs[2].data<float>() : nullptr;
  visit_float_dtype(x.dtype(), "LayerNormalization", [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t row = 0; row < r.rows; ++row) {
      const T* px = x.data<T>() + row * r.n;
      T* py = a.outputs[0].data<T>() + row * r.n;
      double sum = 0.0;
      for (int64_t j = 0; j < r.n; ++j) sum += widen<T>(px[j]);
      const double mean = sum / static_cast<double>(r.n);
      double sq = 0.0;
      for (int64_t j = 0; j < r.n; ++j) sq += (widen<T>(px[j]) - mean) * (widen<T>(px[j]) - mean);
      const double inv_std = 1.0 / std::sqrt(sq / static_cast<double>(r.n) + eps);
      for (int64_t j = 0; j < r.n; ++j) {
        const size_t c = static_cast<size_t>(j);
        py[j] = narrow<T>((widen<T>(px[j]) - mean) * inv_std * scale[c] + bias[c]);
      }
      if (mean_out) mean_out[row] = static_cast<float>(mean);
      if (inv_std_out) inv_std_out[row] = static_cast<float>(inv_std);
    }
  });
}

// Y = X / sqrt(mean(X^2) + epsilon) * scale per row (opset 23).
void rms_norm(const KernelArgs& a) {
  const Tensor& x = a.inputs[0];
  const NormRows r = norm_rows(a);
  const double eps = a.attrs().get_float("epsilon", 1e-5f);
  const std::vector<double> scale = broadcast_row(a.inputs[1], r.row_dims);
  visit_float_dtype(x.dtype(), "RMSNormalization", [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t row = 0; row < r.rows; ++row) {
      const T* px = x.data<T>() + row * r.n;
      T* py = a.outputs[0].data<T>() + row * r.n;
      double sq = 0.0;
      for (int64_t j = 0; j < r.n; ++j) sq += widen<T>(px[j]) * widen<T>(px[j]);
      const double inv_rms = 1.0 / std::sqrt(sq / static_cast<double>(r.n) + eps);
      for (int64_t j = 0; j < r.n; ++j) {
        py[j] = narrow<T>(widen<T>(px[j]) * inv_rms * scale[static_cast<size_t>(j)]);
      }
    }
  });
}

}  // namespace

void register_normalization_kernels(KernelTable& table) {
  table[static_cast<size_t>(Op::kSoftmax)] = softmax;
  table[static_cast<size_t>(Op::kLogSoftmax)] = softmax;
  table[static_cast<size_t>(Op::kLayerNormalization)] = layer_norm;
  table[static_cast<size_t>(Op::kRMSNormalization)] = rms_norm;
}

}  // namespace gf::ref
