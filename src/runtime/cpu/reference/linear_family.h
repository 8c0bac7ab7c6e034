// Private to the linear/NN reference kernels: BLAS GEMM, conversion between storage and compute
// buffers, and the per-file registration functions that register_linear_kernels calls.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/dtype_dispatch.h"
#include "ir/infer_linear_family.h"
#include "runtime/cpu/reference/kernels.h"

namespace gf::ref {

// C[m,n] = op(A) * op(B) for dense row-major A (m x k, or k x m when trans_a) and B (k x n, or
// n x k when trans_b), through OpenBLAS; k == 0 gives zeros. Sizes beyond the BLAS int range
// fail with kUnsupported naming the node.
void gemm(const KernelArgs& args, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
          const float* a, const float* b, float* c);
void gemm(const KernelArgs& args, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
          const double* a, const double* b, double* c);

// The elements of `t` (storage type T) in its compute type (float for the 16-bit floats).
template <class T>
std::vector<ComputeType<T>> to_compute(const Tensor& t) {
  const T* p = t.data<T>();
  std::vector<ComputeType<T>> out(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<ComputeType<T>>(p[i]);
  return out;
}

// Writes compute-type values into `t` (storage type T), rounding to nearest even for 16-bit.
template <class T>
void store(const std::vector<ComputeType<T>>& values, Tensor& t) {
  T* p = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) p[i] = T(values[i]);
}

// The sliding windows of a Conv or pool node over X [N, C, spatial...], resolved with the same
// geometry shape inference used. Positions and taps are enumerated row-major.
struct Windows {
  WindowAttrs attrs;
  std::vector<AxisWindow> axes;
  std::vector<int64_t> in_spatial;           // X's spatial dims
  std::vector<int64_t> in_strides;           // their row-major strides within one channel
  std::vector<std::vector<int64_t>> origin;  // [output position][axis]: o * stride - pad_begin
  std::vector<std::vector<int64_t>> taps;    // [kernel tap][axis]: tap * dilation

  size_t num_positions() const { return origin.size(); }
  size_t num_taps() const { return taps.size(); }
  // The offset within one channel of tap t of window p, or -1 where it falls in the padding.
  int64_t input_offset(size_t p, size_t t) const;
  // Whether tap t of window p lies inside the padded input (input plus explicit/SAME padding);
  // taps beyond it come only from ceil_mode's last window.
  bool in_padded_input(size_t p, size_t t) const;
};
Windows resolve_windows(const Attributes& attrs, const std::vector<int64_t>& x_dims,
                        std::vector<int64_t> kernel, bool pool);

// Per-file registration, called by register_linear_kernels.
void register_matmul_kernels(KernelTable& table);      // MatMul, Gemm
void register_conv_kernels(KernelTable& table);        // Conv
void register_pool_kernels(KernelTable& table);        // MaxPool, AveragePool, Global*Pool
void register_batch_norm_kernels(KernelTable& table);  // BatchNormalization
void register_attention_kernels(KernelTable& table);   // Attention

}  // namespace gf::ref
