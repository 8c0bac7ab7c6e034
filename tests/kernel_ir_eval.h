// A slow, obvious evaluator of the fused-kernel IR for tests: every op is computed by the
// reference interpreter on scalars, so lowering is checked apart from any code generator.
#pragma once

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <vector>

#include "fusion/kernel_ir.h"
#include "test_util.h"

namespace gf::testing {

class KernelIrEvaluator {
 public:
  KernelIrEvaluator(const Graph& g, const fusion::FusedKernel& k) : g_(g), k_(k) {}

  // buffers[i] for k.buffers[i]; outputs are written.
  void run(std::vector<Tensor>& buffers) {
    const int64_t outer = k_.outer_size(), inner = k_.inner_size();
    for (int64_t o = 0; o < outer; ++o) {
      outer_ = unravel(o, k_.outer_dims);
      rows_.assign(k_.reductions.size(), 0);
      for (size_t r = 0; r < k_.reductions.size(); ++r) {
        const auto& red = k_.reductions[r];
        double acc = red.kind == fusion::ReduceKind::kSum ? 0
                     : red.kind == fusion::ReduceKind::kProd ? 1
                     : red.kind == fusion::ReduceKind::kMax ? -INFINITY
                                                             : INFINITY;
        for (int64_t i = 0; i < inner; ++i) {
          inner_ = unravel(i, k_.inner_dims);
          const double v = eval(red.value, buffers);
          if (std::isnan(acc) || std::isnan(v)) {
            acc = NAN;
          } else if (red.kind == fusion::ReduceKind::kSum) {
            acc += v;
          } else if (red.kind == fusion::ReduceKind::kProd) {
            acc *= v;
          } else if (red.kind == fusion::ReduceKind::kMax) {
            acc = std::max(acc, v);
          } else {
            acc = std::min(acc, v);
          }
        }
        rows_[r] = acc;
      }
      for (const auto& s : k_.stores) {
        const int64_t n = s.per_inner ? inner : 1;
        for (int64_t i = 0; i < n; ++i) {
          inner_ = s.per_inner ? unravel(i, k_.inner_dims) : std::vector<int64_t>(k_.inner_dims.size(), 0);
          const auto at = static_cast<int64_t>(eval(s.index, buffers));
          write(buffers[static_cast<size_t>(s.buffer)], at, eval(s.value, buffers));
        }
      }
    }
  }

 private:
  static std::vector<int64_t> unravel(int64_t i, const std::vector<int64_t>& dims) {
    std::vector<int64_t> idx(dims.size());
    for (size_t d = dims.size(); d-- > 0;) {
      idx[d] = i % dims[d];
      i /= dims[d];
    }
    return idx;
  }

  static void write(Tensor& t, int64_t i, double v) {
    EXPECT_TRUE(i >= 0 && i < t.numel()) << "store out of bounds: " << i;
    if (i < 0 || i >= t.numel()) return;
    Tensor one = to_dtype(Tensor::scalar<double>(v), t.dtype());
    std::memcpy(static_cast<char*>(t.raw()) + i * static_cast<int64_t>(dtype_size(t.dtype())),
                one.raw(), dtype_size(t.dtype()));
  }

  // An integer held as a double, saturated at the ends of int64 (2^63 itself does not convert).
  static int64_t as_int(double v) {
    constexpr double kTwo63 = 9223372036854775808.0;
    if (v >= kTwo63) return std::numeric_limits<int64_t>::max();
    if (v < -kTwo63) return std::numeric_limits<int64_t>::min();
    return static_cast<int64_t>(v);
  }

  // Logical 16-bit floats are computed in float, as the generated code does.
  static DType compute_type(DType t) { return t == DType::kF16 || t == DType::kBF16 ? DType::kF32 : t; }

  double eval(fusion::ExprId id, const std::vector<Tensor>& buffers) {
    const fusion::Expr& e = k_.exprs[static_cast<size_t>(id)];
    auto arg = [&](size_t j) { return eval(e.args[j], buffers); };
    switch (e.kind) {
      case fusion::ExprKind::kOuterIndex: return static_cast<double>(outer_[static_cast<size_t>(e.axis)]);
      case fusion::ExprKind::kInnerIndex: return static_cast<double>(inner_[static_cast<size_t>(e.axis)]);
      case fusion::ExprKind::kRowValue: return rows_[static_cast<size_t>(e.axis)];
      case fusion::ExprKind::kConstant: return e.constant;
      case fusion::ExprKind::kLoad: {
        const Tensor& t = buffers[static_cast<size_t>(e.buffer)];
        const int64_t i = as_int(arg(0));
        EXPECT_TRUE(i >= 0 && i < t.numel()) << "load out of bounds: " << i << " in " << t.type_string();
        return i >= 0 && i < t.numel() ? t.element_as_double(i) : NAN;
      }
      case fusion::ExprKind::kCast: {
        Tensor in = to_dtype(Tensor::scalar<double>(arg(0)), compute_type(k_.exprs[static_cast<size_t>(e.args[0])].dtype));
        return run_op1(Op::kCast, {in}, {{"to", static_cast<int64_t>(e.dtype)}}).element_as_double(0);
      }
      case fusion::ExprKind::kSelect: return arg(0) != 0 ? arg(1) : arg(2);
      case fusion::ExprKind::kIndex: {
        const int64_t a = as_int(arg(0)), b = as_int(arg(1));
        switch (e.index_op) {
          case fusion::IndexOp::kAdd: return static_cast<double>(a + b);
          case fusion::IndexOp::kSub: return static_cast<double>(a - b);
          case fusion::IndexOp::kMul: return static_cast<double>(a * b);
          case fusion::IndexOp::kDiv: return static_cast<double>(a / b);
          case fusion::IndexOp::kMod: return static_cast<double>(a % b);
          case fusion::IndexOp::kMin: return static_cast<double>(std::min(a, b));
          case fusion::IndexOp::kMax: return static_cast<double>(std::max(a, b));
          case fusion::IndexOp::kLess: return a < b;
          case fusion::IndexOp::kLessEq: return a <= b;
          case fusion::IndexOp::kEqual: return a == b;
          case fusion::IndexOp::kAnd: return a && b;
        }
        return NAN;
      }
      case fusion::ExprKind::kOp: {
        std::vector<Tensor> ins;
        for (fusion::ExprId a : e.args) {
          ins.push_back(to_dtype(Tensor::scalar<double>(eval(a, buffers)),
                                 compute_type(k_.exprs[static_cast<size_t>(a)].dtype)));
        }
        Attributes attrs = e.node == kNoNode ? Attributes{} : g_.node(e.node).attrs;
        return run_op(e.op, ins, attrs, 1)[0].element_as_double(0);
      }
    }
    return NAN;
  }

  const Graph& g_;
  const fusion::FusedKernel& k_;
  std::vector<int64_t> outer_, inner_;
  std::vector<double> rows_;
};

}  // namespace gf::testing
