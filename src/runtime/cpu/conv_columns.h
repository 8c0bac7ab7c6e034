// The im2col matrix of a conv, built block by block as the packed GEMM asks for it instead of
// copied whole first: row (c, kh, kw), column (oh, ow) holds x[c, oh*sh - ph + kh*dh,
// ow*sw - pw + kw*dw], 0 in the padding. Each block row is masked AVX-512 gathers, so the
// copy, its workspace and its separate pass go (and with them one thread fork per conv).
#pragma once

#include <cstdint>

#include "runtime/cpu/packed_gemm.h"

namespace gf::cpu {

// One spatial axis: input size, output size, kernel, stride, dilation, padding before.
struct ConvAxis {
  int64_t in = 1, out = 1, kernel = 1, stride = 1, dilation = 1, pad = 0;
};

class ConvColumns final : public ColumnSource {
 public:
  // `x` is one image's group of channels, [channels, h.in, w.in].
  ConvColumns(const float* x, const ConvAxis& h, const ConvAxis& w) : x_(x), h_(h), w_(w) {}

  // Whether the gather's 32-bit offsets reach every element of a plane.
  static bool fits(const ConvAxis& h, const ConvAxis& w);

  void pack(int64_t k0, int64_t depth, int64_t n0, int64_t cols, float* dst) const override;

 private:
  const float* x_;
  ConvAxis h_, w_;
};

}  // namespace gf::cpu
