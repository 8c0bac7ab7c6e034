// Helpers of the CPU code generator tests: a FusedKernel builder and a JIT that runs kernels
// on tensors.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "codegen/cpu/cpu_emitter.h"
#include "codegen/cpu/jit_compiler.h"
#include "test_util.h"

namespace gf::testing {

using fusion::Expr;
using fusion::ExprId;
using fusion::ExprKind;
using fusion::FusedKernel;
using fusion::IndexOp;
using fusion::ReduceKind;

inline constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
inline constexpr float kInf = std::numeric_limits<float>::infinity();

// Builds a FusedKernel expr by expr.
class KernelBuilder {
 public:
  explicit KernelBuilder(std::string name) { k.name = std::move(name); }

  int buffer(const std::string& name, DType dtype, std::vector<int64_t> dims, bool output) {
    fusion::KernelBuffer buf;
    buf.name = name;
    buf.dtype = dtype;
    buf.dims = std::move(dims);
    buf.is_output = output;
    k.buffers.push_back(std::move(buf));
    return static_cast<int>(k.buffers.size()) - 1;
  }
  ExprId add(Expr e) {
    k.exprs.push_back(std::move(e));
    return static_cast<ExprId>(k.exprs.size()) - 1;
  }
  static Expr make(ExprKind kind, DType t, int axis = 0) {
    Expr e;
    e.kind = kind;
    e.dtype = t;
    e.axis = axis;
    return e;
  }
  ExprId outer(int axis) { return add(make(ExprKind::kOuterIndex, DType::kI64, axis)); }
  ExprId inner(int axis) { return add(make(ExprKind::kInnerIndex, DType::kI64, axis)); }
  ExprId row(int r, DType t) { return add(make(ExprKind::kRowValue, t, r)); }
  ExprId constant(DType t, double v) {
    Expr e = make(ExprKind::kConstant, t);
    e.constant = v;
    return add(e);
  }
  ExprId index(IndexOp op, ExprId a, ExprId b, DType t = DType::kI64) {
    Expr e = make(ExprKind::kIndex, t);
    e.index_op = op;
    e.args = {a, b};
    return add(e);
  }
  ExprId idx(int64_t v) { return constant(DType::kI64, static_cast<double>(v)); }
  // sum_d ids[d] * strides[d]
  ExprId linear(const std::vector<ExprId>& ids, const std::vector<int64_t>& strides) {
    ExprId acc = idx(0);
    for (size_t d = 0; d < ids.size(); ++d) {
      acc = index(IndexOp::kAdd, acc, index(IndexOp::kMul, ids[d], idx(strides[d])));
    }
    return acc;
  }
  ExprId load(int buf, ExprId at) {
    Expr e = make(ExprKind::kLoad, k.buffers[static_cast<size_t>(buf)].dtype);
    e.buffer = buf;
    e.args = {at};
    return add(e);
  }
  ExprId op(Op o, DType t, std::vector<ExprId> args, NodeId node = kNoNode) {
    Expr e = make(ExprKind::kOp, t);
    e.op = o;
    e.args = std::move(args);
    e.node = node;
    return add(e);
  }
  ExprId cast(DType t, ExprId a) {
    Expr e = make(ExprKind::kCast, t);
    e.args = {a};
    return add(e);
  }
  ExprId select(DType t, ExprId c, ExprId a, ExprId b) {
    Expr e = make(ExprKind::kSelect, t);
    e.args = {c, a, b};
    return add(e);
  }
  void store(int buf, ExprId at, ExprId value, bool per_inner = false) {
    fusion::Store st;
    st.buffer = buf;
    st.index = at;
    st.value = value;
    st.per_inner = per_inner;
    k.stores.push_back(st);
  }

  void reduce(fusion::RowReduction r) { k.reductions.push_back(r); }

  FusedKernel k;
};

// One cache directory per test process, removed at exit: each run really compiles.
inline codegen::JitCompiler& jit() {
  static const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("gf_test_cpu_codegen_" + std::to_string(getpid()));
  static codegen::JitCompiler compiler([] {
    codegen::JitOptions o;
    o.cache_dir = dir;
    return o;
  }());
  static const struct Cleanup {
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup;
  return compiler;
}

// Emits, compiles and runs `k` on `buffers` (in k.buffers order).
inline void run_kernel(const FusedKernel& k, const Graph& g, const std::vector<Tensor*>& buffers,
                       const codegen::CpuEmitOptions& options = {}) {
  const std::string source = codegen::emit_cpu_kernel(k, g, options);
  codegen::JitLibraryPtr lib = jit().compile(source);
  std::vector<void*> ptrs;
  for (Tensor* t : buffers) ptrs.push_back(t->raw());
  lib->kernel(k.name)(ptrs.data());
}

inline std::vector<double> as_doubles(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.element_as_double(i));
  return v;
}

}  // namespace gf::testing
