// Opset differences: where an older opset passed as attributes what the newest passes as inputs,
// or had other semantics, the node is rewritten into the newest form (the form our IR takes).
#include "onnx/onnx_nodes.h"

namespace gf::onnx_import {

namespace {

// Input `i` of a node being rewritten. The rewrites run before add_node checks the arity, so a
// malformed node (an input missing or left empty) is refused here, naming it.
ValueId required_input(const PendingNode& n, size_t i) {
  if (i >= n.inputs.size() || n.inputs[i] == kNoValue) {
    throw Error(ErrorCode::kInvalidGraph, n.what + ": required input " + std::to_string(i) + " is missing");
  }
  return n.inputs[i];
}

// Moves integer-list attribute `attr` into input slot `slot` (padding skipped slots with
// kNoValue). Absent attribute: nothing is added.
void ints_attr_to_input(PendingNode& n, GraphAssembler& out, const char* attr, size_t slot) {
  if (!n.attrs.has(attr)) return;
  const std::vector<int64_t> values = n.attrs.get_ints(attr);
  n.attrs.erase(attr);
  if (n.inputs.size() <= slot) n.inputs.resize(slot + 1, kNoValue);
  n.inputs[slot] = out.add_ints(n.name + "/" + attr, values);
}

// Same for a float attribute that becomes a scalar input of the data input's dtype.
void scalar_attr_to_input(PendingNode& n, GraphAssembler& out, const char* attr, size_t slot) {
  if (!n.attrs.has(attr)) return;
  const float value = n.attrs.get_float(attr, 0.0f);
  n.attrs.erase(attr);
  if (n.inputs.size() <= slot) n.inputs.resize(slot + 1, kNoValue);
  n.inputs[slot] = out.add_constant(n.name + "/" + attr, scalar_tensor(out.type(required_input(n, 0)).dtype, value));
}

bool is_reduce(Op op) {
  switch (op) {
    case Op::kReduceSum: case Op::kReduceMean: case Op::kReduceMax: case Op::kReduceMin:
    case Op::kReduceProd: case Op::kReduceL1: case Op::kReduceL2: case Op::kReduceSumSquare:
    case Op::kReduceLogSum: case Op::kReduceLogSumExp: return true;
    default: return false;
  }
}

bool has_legacy_broadcast(Op op) {
  switch (op) {
    case Op::kAdd: case Op::kSub: case Op::kMul: case Op::kDiv: case Op::kPow: case Op::kAnd:
    case Op::kOr: case Op::kXor: case Op::kEqual: case Op::kGreater: case Op::kLess: return true;
    default: return false;
  }
}

// Before opset 7, binary ops broadcast only with broadcast=1, aligning B's dims with A's
// starting at `axis` (default: trailing, as numpy does). Numpy rules are a superset once B is
// given trailing 1s.
void legacy_broadcast(PendingNode& n, GraphAssembler& out) {
  const bool broadcast = n.attrs.get_int("broadcast", 0) != 0;
  const bool has_axis = n.attrs.has("axis");
  const int64_t axis_attr = n.attrs.get_int("axis", 0);
  n.attrs.erase("broadcast");
  n.attrs.erase("axis");
  if (!broadcast || !has_axis || n.inputs.size() != 2) return;
  const auto rank_a = static_cast<int64_t>(out.type(required_input(n, 0)).shape.rank());
  const auto rank_b = static_cast<int64_t>(out.type(required_input(n, 1)).shape.rank());
  const int64_t axis = axis_attr < 0 ? axis_attr + rank_a : axis_attr;
  if (axis < 0 || axis + rank_b > rank_a) {
    throw Error(ErrorCode::kInvalidGraph, n.what + ": broadcast axis " + std::to_string(axis_attr) +
                                              " does not fit ranks " + std::to_string(rank_a) + " and " +
                                              std::to_string(rank_b));
  }
  std::vector<int64_t> trailing;
  for (int64_t d = rank_b; d < rank_a - axis; ++d) trailing.push_back(d);
  if (trailing.empty()) return;
  ValueId axes = out.add_ints(n.name + "/axes", trailing);
  n.inputs[1] = out.add_helper(Op::kUnsqueeze, n.name + "/align", {n.inputs[1], axes});
}

// Before opset 13, Softmax and LogSoftmax flattened the input to 2-D at `axis` (default 1) and
// normalized each row; the newest form normalizes along one axis.
bool legacy_softmax(PendingNode& n, GraphAssembler& out) {
  const ValueId x = required_input(n, 0);
  const auto rank = static_cast<int64_t>(out.type(x).shape.rank());
  int64_t axis = n.attrs.get_int("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > std::max<int64_t>(rank - 1, 0)) {
    throw Error(ErrorCode::kInvalidGraph, n.what + ": axis " + std::to_string(n.attrs.get_int("axis", 1)) +
                                              " is out of range for rank " + std::to_string(rank));
  }
  if (axis >= rank - 1) {  // one axis already: same semantics
    n.attrs.set("axis", int64_t{-1});
    return false;
  }
  ValueId shape = out.add_helper(Op::kShape, n.name + "/shape", {x});
  ValueId flat = out.add_helper(Op::kFlatten, n.name + "/flatten", {x}, {{"axis", axis}});
  ValueId rows = out.add_helper(n.op, n.name + "/rows", {flat}, {{"axis", int64_t{-1}}});
  out.add_node(Op::kReshape, n.name, {rows, shape}, n.outputs, {});
  return true;
}

// Before opset 7, PRelu's 1-D slope ran along the channel axis (1), not the last one.
void legacy_prelu(PendingNode& n, GraphAssembler& out) {
  const Shape& x = out.type(required_input(n, 0)).shape;
  const Shape& slope = out.type(required_input(n, 1)).shape;
  if (x.rank() <= 2 || slope.rank() != 1 || !(slope[0] == x[1]) || (slope[0].is_static() && slope[0].value() == 1)) {
    return;
  }
  std::vector<int64_t> trailing;
  for (int64_t d = 1; d < static_cast<int64_t>(x.rank()) - 1; ++d) trailing.push_back(d);
  ValueId axes = out.add_ints(n.name + "/axes", trailing);
  n.inputs[1] = out.add_helper(Op::kUnsqueeze, n.name + "/per_channel", {n.inputs[1], axes});
}

}  // namespace

bool convert_legacy(PendingNode& n, GraphAssembler& out) {
  const int64_t v = n.opset;
  if (v < 7 && has_legacy_broadcast(n.op)) legacy_broadcast(n, out);
  if (is_reduce(n.op) && (v < 13 || (n.op != Op::kReduceSum && v < 18))) {
    ints_attr_to_input(n, out, "axes", 1);
  }
  switch (n.op) {
    case Op::kSqueeze:
    case Op::kUnsqueeze:
      if (v < 13) ints_attr_to_input(n, out, "axes", 1);
      break;
    case Op::kSplit:
      if (v < 13) ints_attr_to_input(n, out, "split", 1);
      break;
    case Op::kSlice:
      if (v < 10) {
        ints_attr_to_input(n, out, "starts", 1);
        ints_attr_to_input(n, out, "ends", 2);
        ints_attr_to_input(n, out, "axes", 3);
      }
      break;
    case Op::kPad:
      if (v < 11) {
        ints_attr_to_input(n, out, "pads", 1);
        scalar_attr_to_input(n, out, "value", 2);
      }
      break;
    case Op::kClip:
      if (v < 11) {
        scalar_attr_to_input(n, out, "min", 1);
        scalar_attr_to_input(n, out, "max", 2);
      }
      break;
    case Op::kDropout:
      if (v < 12) {  // inference: the ratio does not matter
        n.attrs.erase("ratio");
        n.attrs.erase("is_test");
      }
      break;
    case Op::kBatchNormalization:
      if (v < 9 && n.attrs.get_int("spatial", 1) == 0) {
        throw Error(ErrorCode::kUnsupported, n.what + ": spatial=0 (per-element statistics) is not supported");
      }
      n.attrs.erase("spatial");
      n.attrs.erase("is_test");
      break;
    case Op::kPRelu:
      if (v < 7) legacy_prelu(n, out);
      break;
    case Op::kGemm:
      if (v < 7) n.attrs.erase("broadcast");
      break;
    case Op::kSoftmax:
    case Op::kLogSoftmax:
      if (v < 13) return legacy_softmax(n, out);
      break;
    default: break;
  }
  return false;
}

}  // namespace gf::onnx_import
