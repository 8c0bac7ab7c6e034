// The fused-kernel IR: what one fusion group computes, as scalar expressions over loop indices.
// Both code generators (C++ for the CPU, CUDA C++ for NVRTC) read it; neither sees graph ops.
//
// A kernel has an outer iteration space (`outer_dims`) and, for reductions, an inner one
// (`inner_dims`). Per outer point it first computes its row values (each a reduction over the
// inner space, in order, each free to use the ones before), then runs its stores: a store with
// `per_inner` set runs at every inner point, the others once per outer point.
//
//   for o in outer_dims:
//     row[0] = reduce_{i in inner_dims} expr(o, i)          (reductions, in order)
//     row[1] = reduce_{i in inner_dims} expr(o, i, row[0])
//     buffer[index(o)] = value(o, row)                       (stores with per_inner = false)
//     for i in inner_dims: buffer[index(o, i)] = value(o, i, row)   (per_inner = true)
//
// Kernels are generated for static shapes; every dim here is concrete.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graphfuse/graph.h"

namespace gf::fusion {

using ExprId = int32_t;

enum class ExprKind : uint8_t {
  kOuterIndex,  // i64: outer loop variable `axis`
  kInnerIndex,  // i64: inner loop variable `axis`
  kRowValue,    // the row value `axis` (a reduction result) of the current outer point
  kConstant,    // scalar `constant` of `dtype`
  kLoad,        // buffers[buffer][args[0]] (a linear element index, i64)
  kOp,          // op `op` of the op table applied to args (elementwise semantics, attrs from node)
  kCast,        // args[0] converted to `dtype`
  kIndex,       // i64 integer arithmetic `index_op` over args
  kSelect,      // args[0] (bool) ? args[1] : args[2]
};

enum class IndexOp : uint8_t { kAdd, kSub, kMul, kDiv, kMod, kMin, kMax, kLess, kLessEq, kEqual, kAnd };

enum class ReduceKind : uint8_t { kSum, kMax, kMin, kProd };

struct Expr {
  ExprKind kind;
  DType dtype;  // result type; i64 for index expressions, bool for predicates
  Op op = Op::kIdentity;
  IndexOp index_op = IndexOp::kAdd;
  int axis = 0;
  int buffer = -1;
  double constant = 0;
  std::vector<ExprId> args;
  NodeId node = kNoNode;  // the graph node a kOp came from (its attributes; its name for comments)
};

struct KernelBuffer {
  std::string name;
  DType dtype;
  std::vector<int64_t> dims;
  bool is_output = false;
  ValueId value = kNoValue;  // the graph value it holds
};

struct RowReduction {
  ReduceKind kind;
  DType accumulate;  // f32 (f64 for f64 data) for floats; i64 for integers
  ExprId value;      // over outer and inner indices (and earlier row values)
};

struct Store {
  int buffer;
  ExprId index;  // linear element index into the buffer
  ExprId value;
  bool per_inner = false;
};

struct FusedKernel {
  std::string name;     // a C identifier, unique in its program
  std::string comment;  // the fused ops and the model's node names they came from
  std::vector<KernelBuffer> buffers;
  std::vector<int64_t> outer_dims;
  std::vector<int64_t> inner_dims;
  std::vector<Expr> exprs;  // a DAG: every arg refers to an earlier entry
  std::vector<RowReduction> reductions;
  std::vector<Store> stores;

  int64_t outer_size() const;
  int64_t inner_size() const;
};

// Lowers one fusion group (pointwise or reduction kind; static shapes) into a fused kernel.
// Throws kUnsupported naming the node when an op has no lowering yet.
struct Group;
FusedKernel lower_group(const Graph& g, const Group& group, const std::string& kernel_name);

// A readable dump, for tests and --dump-after.
std::string kernel_to_string(const FusedKernel& k);

}  // namespace gf::fusion
