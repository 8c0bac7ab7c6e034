// What code generators need to know about a FusedKernel's integer index expressions to make
// them cheap: the range of values each can take (so it can be computed in 32 bits), and how a
// load or store moves when a run of consecutive loop points is processed together (so it can be
// one vector access).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "fusion/kernel_ir.h"

namespace gf::codegen {

// A closed interval of integers.
struct IndexRange {
  int64_t lo = 0, hi = 0;
};

// Per expr: the range of its value over the whole iteration space, for the pure index exprs
// (loop indices, integer constants, index arithmetic and selects over those); nullopt for the
// others (data, floats) and for index arithmetic that may divide by zero or overflow 64 bits.
std::vector<std::optional<IndexRange>> index_ranges(const fusion::FusedKernel& k);

// Whether the kernel's index arithmetic can be 32-bit: every buffer, the outer and the inner
// space hold at most INT32_MAX elements. Each expr is then narrowed only where its range
// (index_ranges) fits too.
bool fits_32bit_indexing(const fusion::FusedKernel& k);

// How a load or store index behaves over `width` consecutive points of a loop space (the outer
// space of a pointwise kernel, or a row's inner space) whose first point's flat index is a
// multiple of `width`.
enum class VectorAccess : uint8_t {
  kContiguous,  // `width` consecutive elements, the first at a multiple of `width`
  kUniform,     // the same element at every point (a broadcast along the run)
  kScattered,   // anything else: one scalar access per point
};

struct VectorPlan {
  int width = 1;
  // The first dim of the loop space that varies inside a run: a run never crosses a step of
  // the dims before it (the product of the dims from here on is a multiple of `width`, or this
  // is 0 and a run may stop at the end of the space, where a scalar tail takes over).
  int first_varying_dim = 0;
  std::vector<VectorAccess> loads;   // per expr id (meaningful for kLoad exprs)
  std::vector<VectorAccess> stores;  // per store
};

// Classifies every load and store of `k` for runs of `width` points over the loop space `dims`,
// whose loop indices are the exprs of `kind` (kOuterIndex or kInnerIndex). Row values and the
// indices of the other space are constant along a run. Analysis is exact for affine index
// exprs (sums of loop indices times constants, plus anything constant along the run);
// everything else is kScattered.
VectorPlan plan_vector_access(const fusion::FusedKernel& k, fusion::ExprKind kind,
                              const std::vector<int64_t>& dims, int width);

}  // namespace gf::codegen
