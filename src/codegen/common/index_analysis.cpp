// Range and vector-access analysis of index expressions.
#include "codegen/common/index_analysis.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace gf::codegen {

using fusion::Expr;
using fusion::ExprKind;
using fusion::IndexOp;

namespace {

using Wide = __int128;
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kI32Max = std::numeric_limits<int32_t>::max();

int64_t product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// The hull of `values`, or nullopt when one leaves int64.
std::optional<IndexRange> hull(std::initializer_list<Wide> values) {
  Wide lo = *values.begin(), hi = lo;
  for (Wide v : values) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (lo < kI64Min || hi > kI64Max) return std::nullopt;
  return IndexRange{static_cast<int64_t>(lo), static_cast<int64_t>(hi)};
}

std::optional<IndexRange> index_op_range(IndexOp op, IndexRange a, IndexRange b) {
  switch (op) {
    case IndexOp::kAdd:
      return hull({Wide{a.lo} + b.lo, Wide{a.hi} + b.hi});
    case IndexOp::kSub:
      return hull({Wide{a.lo} - b.hi, Wide{a.hi} - b.lo});
    case IndexOp::kMul:
      return hull({Wide{a.lo} * b.lo, Wide{a.lo} * b.hi, Wide{a.hi} * b.lo, Wide{a.hi} * b.hi});
    case IndexOp::kDiv:
      // Truncating division is monotone in each operand while the divisor keeps its sign, so
      // the corners bound it.
      if (b.lo <= 0 && b.hi >= 0) return std::nullopt;
      if (a.lo == kI64Min) return std::nullopt;  // INT64_MIN / -1
      return hull({Wide{a.lo} / b.lo, Wide{a.lo} / b.hi, Wide{a.hi} / b.lo, Wide{a.hi} / b.hi});
    case IndexOp::kMod: {
      if (b.lo <= 0 && b.hi >= 0) return std::nullopt;
      // |a % b| < |b|, with the sign of a.
      const Wide m = std::max(-Wide{b.lo}, Wide{b.hi}) - 1;
      const Wide lo = a.lo >= 0 ? Wide{0} : std::max(Wide{a.lo}, -m);
      const Wide hi = a.hi <= 0 ? Wide{0} : std::min(Wide{a.hi}, m);
      return hull({lo, hi});
    }
    case IndexOp::kMin:
      return IndexRange{std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
    case IndexOp::kMax:
      return IndexRange{std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
    case IndexOp::kLess:
    case IndexOp::kLessEq:
    case IndexOp::kEqual:
    case IndexOp::kAnd:
      return IndexRange{0, 1};
  }
  return std::nullopt;
}

int64_t gcd_or_one(Wide a, Wide b) {
  // A multiple that does not fit is only known to be a multiple of 1.
  if (a > kI64Max || b > kI64Max) return 1;
  return std::gcd(static_cast<int64_t>(a), static_cast<int64_t>(b));
}

// An index expr over a run: sum(coef[d] * index_d over the varying dims) + rest, where `rest`
// is constant along the run and a multiple of `multiple` (0: rest is 0).
struct Affine {
  bool varies = false;  // depends on a varying loop index
  bool affine = true;   // meaningful when it varies
  std::vector<int64_t> coef;
  int64_t multiple = 1;
};

}  // namespace

std::vector<std::optional<IndexRange>> index_ranges(const fusion::FusedKernel& k) {
  std::vector<std::optional<IndexRange>> r(k.exprs.size());
  auto dim_range = [](const std::vector<int64_t>& dims, int axis) {
    const int64_t d = dims.at(static_cast<size_t>(axis));
    return IndexRange{0, std::max<int64_t>(d - 1, 0)};
  };
  for (size_t id = 0; id < k.exprs.size(); ++id) {
    const Expr& e = k.exprs[id];
    auto arg = [&](size_t i) { return r[static_cast<size_t>(e.args[i])]; };
    switch (e.kind) {
      case ExprKind::kOuterIndex:
        r[id] = dim_range(k.outer_dims, e.axis);
        break;
      case ExprKind::kInnerIndex:
        r[id] = dim_range(k.inner_dims, e.axis);
        break;
      case ExprKind::kConstant:
        if (e.dtype == DType::kI64) {
          const auto v = static_cast<int64_t>(e.constant);
          r[id] = IndexRange{v, v};
        }
        break;
      case ExprKind::kIndex:
        if (e.dtype == DType::kI64 && arg(0) && arg(1))
          r[id] = index_op_range(e.index_op, *arg(0), *arg(1));
        break;
      case ExprKind::kSelect:
        if (e.dtype == DType::kI64 && arg(1) && arg(2)) {
          r[id] = IndexRange{std::min(arg(1)->lo, arg(2)->lo), std::max(arg(1)->hi, arg(2)->hi)};
        }
        break;
      default:
        break;
    }
  }
  return r;
}

bool fits_32bit_indexing(const fusion::FusedKernel& k) {
  if (product(k.outer_dims) > kI32Max || product(k.inner_dims) > kI32Max) return false;
  return std::all_of(k.buffers.begin(), k.buffers.end(),
                     [](const fusion::KernelBuffer& b) { return product(b.dims) <= kI32Max; });
}

VectorPlan plan_vector_access(const fusion::FusedKernel& k, ExprKind kind,
                              const std::vector<int64_t>& dims, int width) {
  VectorPlan plan;
  plan.width = width;
  const int n = static_cast<int>(dims.size());
  plan.first_varying_dim = 0;
  for (int d = n - 1; d >= 0; --d) {
    std::vector<int64_t> suffix(dims.begin() + d, dims.end());
    if (product(suffix) % width == 0) {
      plan.first_varying_dim = d;
      break;
    }
  }
  std::vector<int64_t> stride(dims.size(), 1);
  for (int d = n - 2; d >= 0; --d) stride[d] = stride[d + 1] * dims[d + 1];

  std::vector<Affine> a(k.exprs.size());
  for (size_t id = 0; id < k.exprs.size(); ++id) {
    const Expr& e = k.exprs[id];
    Affine& x = a[id];
    x.coef.assign(dims.size(), 0);
    for (fusion::ExprId arg : e.args) x.varies = x.varies || a[static_cast<size_t>(arg)].varies;
    auto arg = [&](size_t i) -> const Affine& { return a[static_cast<size_t>(e.args[i])]; };
    auto constant = [&](size_t i, int64_t& v) {
      const Expr& c = k.exprs[static_cast<size_t>(e.args[i])];
      if (c.kind != ExprKind::kConstant || c.dtype != DType::kI64) return false;
      v = static_cast<int64_t>(c.constant);
      return true;
    };
    if (e.kind == kind) {
      if (e.axis >= plan.first_varying_dim) {
        x.varies = true;
        x.coef[static_cast<size_t>(e.axis)] = 1;
        x.multiple = 0;
      }
      continue;
    }
    if (e.kind == ExprKind::kConstant) {
      const auto v = static_cast<int64_t>(e.constant);
      if (e.dtype == DType::kI64) x.multiple = gcd_or_one(v < 0 ? -Wide{v} : Wide{v}, 0);
      continue;
    }
    if (!x.varies) {
      // Constant along the run: only its divisibility matters.
      if (e.kind == ExprKind::kIndex) {
        int64_t c = 0;
        switch (e.index_op) {
          case IndexOp::kAdd:
          case IndexOp::kSub:
          case IndexOp::kMin:
          case IndexOp::kMax:
            x.multiple = gcd_or_one(arg(0).multiple, arg(1).multiple);
            break;
          case IndexOp::kMul:
            x.multiple = gcd_or_one(Wide{arg(0).multiple} * arg(1).multiple, 0);
            break;
          case IndexOp::kMod:
            x.multiple =
                constant(1, c) ? gcd_or_one(arg(0).multiple, c < 0 ? -Wide{c} : Wide{c}) : 1;
            break;
          default:
            break;
        }
      } else if (e.kind == ExprKind::kSelect) {
        x.multiple = gcd_or_one(arg(1).multiple, arg(2).multiple);
      }
      continue;
    }
    // It varies: affine only through +, - and * by a constant.
    x.affine = false;
    if (e.kind != ExprKind::kIndex) continue;
    int64_t c = 0;
    if ((e.index_op == IndexOp::kAdd || e.index_op == IndexOp::kSub) && arg(0).affine &&
        arg(1).affine) {
      const int64_t sign = e.index_op == IndexOp::kAdd ? 1 : -1;
      for (size_t d = 0; d < dims.size(); ++d) x.coef[d] = arg(0).coef[d] + sign * arg(1).coef[d];
      x.multiple = gcd_or_one(arg(0).multiple, arg(1).multiple);
      x.affine = true;
    } else if (e.index_op == IndexOp::kMul) {
      for (size_t i : {size_t{0}, size_t{1}}) {
        const Affine& other = arg(1 - i);
        if (!constant(i, c) || !other.affine) continue;
        for (size_t d = 0; d < dims.size(); ++d) x.coef[d] = other.coef[d] * c;
        x.multiple = gcd_or_one(Wide{other.multiple} * (c < 0 ? -Wide{c} : Wide{c}), 0);
        x.affine = true;
        break;
      }
    }
  }

  auto classify = [&](fusion::ExprId index) {
    const Affine& x = a[static_cast<size_t>(index)];
    if (!x.varies) return VectorAccess::kUniform;
    if (!x.affine || x.multiple % width != 0) return VectorAccess::kScattered;
    for (int d = 0; d < n; ++d) {
      if (dims[static_cast<size_t>(d)] == 1) continue;  // its index is always 0
      const int64_t want = d >= plan.first_varying_dim ? stride[static_cast<size_t>(d)] : 0;
      if (x.coef[static_cast<size_t>(d)] != want) return VectorAccess::kScattered;
    }
    return VectorAccess::kContiguous;
  };
  plan.loads.assign(k.exprs.size(), VectorAccess::kScattered);
  for (size_t id = 0; id < k.exprs.size(); ++id) {
    if (k.exprs[id].kind == ExprKind::kLoad) plan.loads[id] = classify(k.exprs[id].args[0]);
  }
  for (const fusion::Store& s : k.stores) plan.stores.push_back(classify(s.index));
  return plan;
}

}  // namespace gf::codegen
