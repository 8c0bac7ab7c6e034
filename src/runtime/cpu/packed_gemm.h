// A GEMM for constant left operands (conv weights): Y[M, N] = W[M, K] * B[K, N] (+ bias per
// row), with W packed once at build time into panels of kPanelRows rows, k-major, so the inner
// kernel broadcasts W's values from one stream and reads B's rows in place. OpenBLAS repacked
// every conv's weights on every run (18% of ResNet-50's time on one thread) and needs a
// separate pass to apply the bias; here the bias is the accumulators' initial value. AVX-512
// only; elsewhere available() is false and callers keep to sgemm.
#pragma once

#include <cstdint>
#include <vector>

namespace gf::cpu {

// B of a packed GEMM, handed over one block at a time: rows [k0, k0 + depth) of columns
// [n0, n0 + cols) written to `dst` as depth rows of kBlockCols floats, zero past cols. A source
// may build B on the fly (conv_columns.h: a conv's windows without an im2col copy).
class ColumnSource {
 public:
  static constexpr int64_t kBlockCols = 48;  // three 16-float vectors
  virtual ~ColumnSource() = default;
  virtual void pack(int64_t k0, int64_t depth, int64_t n0, int64_t cols, float* dst) const = 0;
};

// A row-major matrix [k, *] with leading dimension ldb.
class DenseColumns final : public ColumnSource {
 public:
  DenseColumns(const float* b, int64_t ldb) : b_(b), ldb_(ldb) {}
  void pack(int64_t k0, int64_t depth, int64_t n0, int64_t cols, float* dst) const override;

 private:
  const float* b_;
  int64_t ldb_;
};

// Applied to Y's values as they are stored for the last time: + residual (same layout as Y, with
// leading dimension ldr), then max(0, .) (NaN and -0 kept, as the generated Relu does). The bits
// are those of a separate pass over the stored Y.
struct GemmEpilogue {
  const float* residual = nullptr;
  int64_t ldr = 0;
  bool relu = false;
  bool empty() const { return residual == nullptr && !relu; }
};

class PackedWeights {
 public:
  static constexpr int64_t kPanelRows = 8;
  static constexpr int64_t kDepth = 256;  // K's block; see packed_gemm.cpp

  // Whether this CPU runs the packed kernel.
  static bool available();

  // `w` is row-major [m, k] (leading dimension k).
  PackedWeights(const float* w, int64_t m, int64_t k);

  // Y[m0:m1, n0:n1] = W[m0:m1, :] * B[:, n0:n1] + bias[m0:m1] (0 where bias is null), Y
  // row-major with leading dimension ldy. m0 must be a multiple of kPanelRows. Single-threaded:
  // callers split the rows or columns across threads.
  void multiply(const ColumnSource& b, const float* bias, float* y, int64_t ldy, int64_t m0,
                int64_t m1, int64_t n0, int64_t n1, const GemmEpilogue& epilogue = {}) const;

  int64_t rows() const { return m_; }

 private:
  int64_t m_, k_;
  // Panel `row / kPanelRows`'s rows over K's block [k0, k0 + kDepth), k-major.
  const float* panel(int64_t row, int64_t k0) const;
  float* panel(int64_t row, int64_t k0);

  // By K's blocks, then panels, then k, then row: the GEMM walks every panel of one depth block
  // in turn, so the weights stream from memory in one sequential run per block.
  std::vector<float> panels_;
};

}  // namespace gf::cpu
