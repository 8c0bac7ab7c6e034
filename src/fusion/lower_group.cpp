// Lowers a fusion group into the fused-kernel IR. Values are built on demand: the value of a
// tensor at an index is an expression, obtained from its producer's rule (elementwise ops apply
// their op to their inputs at the broadcast index; layout ops remap the index, the gathers with
// indices they load) down to loads of the group's inputs.
#include <cmath>
#include <map>
#include <set>

#include "fusion/kernel_builder.h"
#include "fusion/kernel_ir.h"
#include "fusion/plan.h"
#include "ir/layout_rules.h"

namespace gf::fusion {

namespace {

class GroupLowering {
 public:
  GroupLowering(const Graph& g, const Group& group, FusedKernel& k)
      : g_(g), group_(group), k_(k), b_(k) {
    for (NodeId id : group.nodes) in_group_.insert(id);
    // A GEMM or attention group lowers only its epilogue: the anchor's output is an input.
    if (group.kind == GroupKind::kGemm || group.kind == GroupKind::kAttention) {
      in_group_.erase(group.anchor);
    } else if (group.anchor != kNoNode) {
      reduction_ = group.anchor;
    }
  }

  void run() {
    std::string ops;
    for (NodeId id : group_.nodes) {
      if (!in_group_.count(id)) continue;
      const Node& n = g_.node(id);
      ops += (ops.empty() ? "" : ", ") + std::string(op_name(n.op)) + " (" + n.name + ")";
    }
    k_.comment = "fused: " + ops;
    if (reduction_ != kNoNode) {
      setup_reduction();
    } else {
      setup_pointwise();
    }
    for (ValueId v : group_.outputs) {
      if (!produced_in_group(v)) continue;  // e.g. the GEMM anchor's own output
      emit_store(v);
    }
  }

 private:
  [[noreturn]] void unsupported(const Node& n, const std::string& why) const {
    throw Error(ErrorCode::kUnsupported, "node '" + n.name + "' (" + std::string(op_name(n.op)) +
                                             "): no fused lowering: " + why);
  }

  std::vector<int64_t> dims(ValueId v) const {
    const Shape& s = g_.value(v).type.shape;
    if (!s.is_static()) {
      throw Error(ErrorCode::kUnsupported, "value '" + g_.value(v).name + "' has shape " +
                                               s.to_string() +
                                               ": fused kernels need static shapes");
    }
    return s.static_dims();
  }
  static int64_t numel(const std::vector<int64_t>& d) {
    int64_t n = 1;
    for (int64_t x : d) n *= x;
    return n;
  }
  DType dtype(ValueId v) const { return g_.value(v).type.dtype; }
  bool produced_in_group(ValueId v) const {
    const NodeId p = g_.value(v).producer;
    return p != kNoNode && in_group_.count(p);
  }
  const Tensor& constant_input(const Node& n, size_t i, const char* what) const {
    if (i >= n.inputs.size() || n.inputs[i] == kNoValue || !g_.value(n.inputs[i]).is_constant()) {
      unsupported(n, std::string(what) + " must be a constant");
    }
    return g_.value(n.inputs[i]).constant;
  }

  int buffer_for(ValueId v, bool output) {
    auto it = buffers_.find(v);
    if (it != buffers_.end()) return it->second;
    const int id = static_cast<int>(k_.buffers.size());
    k_.buffers.push_back(KernelBuffer{g_.value(v).name, dtype(v), dims(v), output, v});
    buffers_.emplace(v, id);
    return id;
  }

  std::vector<ExprId> outer_index() {
    std::vector<ExprId> idx;
    for (size_t d = 0; d < k_.outer_dims.size(); ++d) idx.push_back(b_.outer(static_cast<int>(d)));
    return idx;
  }

  // Iteration space: a pointwise group runs over its outputs (equal element counts, as the
  // planner guarantees); a reduction over the kept (outer) and reduced (inner) dims of its
  // anchor's input.
  void setup_pointwise() {
    GF_ASSERT(!group_.outputs.empty());
    k_.outer_dims = dims(group_.outputs.front());
  }

  void setup_reduction() {
    const Node& a = g_.node(reduction_);
    x_dims_ = dims(a.inputs[0]);
    const auto rank = static_cast<int64_t>(x_dims_.size());
    reduced_.assign(x_dims_.size(), false);
    auto axis_attr = [&](int64_t fallback) {
      int64_t ax = a.attrs.get_int("axis", fallback);
      return ax < 0 ? ax + rank : ax;
    };
    switch (a.op) {
      case Op::kSoftmax:
      case Op::kLogSoftmax: reduced_[static_cast<size_t>(axis_attr(-1))] = true; break;
      case Op::kLayerNormalization:
      case Op::kRMSNormalization:
        for (int64_t d = axis_attr(-1); d < rank; ++d) reduced_[static_cast<size_t>(d)] = true;
        break;
      case Op::kReduceSum: case Op::kReduceMean: case Op::kReduceMax: case Op::kReduceMin:
      case Op::kReduceProd: case Op::kReduceL1: case Op::kReduceL2: case Op::kReduceSumSquare:
      case Op::kReduceLogSum: case Op::kReduceLogSumExp: {
        std::vector<int64_t> axes;
        if (a.inputs.size() > 1 && a.inputs[1] != kNoValue) {
          axes = constant_input(a, 1, "the axes input").to_int_vector();
        }
        if (axes.empty() && a.attrs.get_int("noop_with_empty_axes", 0)) unsupported(a, "no-op reduction");
        if (axes.empty()) reduced_.assign(x_dims_.size(), true);
        for (int64_t ax : axes) reduced_[static_cast<size_t>(ax < 0 ? ax + rank : ax)] = true;
        break;
      }
      default: unsupported(a, "not a row reduction");
    }
    for (size_t d = 0; d < x_dims_.size(); ++d) {
      (reduced_[d] ? k_.inner_dims : k_.outer_dims).push_back(x_dims_[d]);
    }
  }

  // The anchor input's index at the current (outer, inner) point.
  std::vector<ExprId> full_index() {
    std::vector<ExprId> idx;
    int o = 0, i = 0;
    for (size_t d = 0; d < x_dims_.size(); ++d) idx.push_back(reduced_[d] ? b_.inner(i++) : b_.outer(o++));
    return idx;
  }

  void emit_store(ValueId v) {
    const std::vector<int64_t> vd = dims(v);
    const int buf = buffer_for(v, true);
    std::vector<ExprId> idx;
    bool per_inner = false;
    if (reduction_ == kNoNode) {
      idx = vd == k_.outer_dims ? outer_index()
                                : b_.delinearize(b_.linearize(outer_index(), k_.outer_dims), vd);
    } else if (numel(vd) == numel(x_dims_) && (numel(vd) != numel(k_.outer_dims) || vd == x_dims_)) {
      per_inner = true;
      const std::vector<ExprId> full = full_index();
      idx = vd == x_dims_ ? full : b_.delinearize(b_.linearize(full, x_dims_), vd);
    } else {
      idx = b_.delinearize(b_.linearize(outer_index(), k_.outer_dims), vd);
    }
    const ExprId value = value_at(v, idx);
    k_.stores.push_back(Store{buf, b_.linearize(idx, vd), value, per_inner});
  }

  ExprId value_at(ValueId v, const std::vector<ExprId>& idx) {
    auto key = std::make_pair(v, idx);
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    ExprId e;
    if (!produced_in_group(v)) {
      e = b_.load(buffer_for(v, false), b_.linearize(idx, dims(v)));
    } else {
      const Node& n = g_.node(g_.value(v).producer);
      size_t output = 0;
      while (n.outputs[output] != v) ++output;
      e = node_value(n, output, idx);
    }
    memo_.emplace(std::move(key), e);
    return e;
  }

  ExprId node_value(const Node& n, size_t output, const std::vector<ExprId>& idx) {
    if (g_.value(n.outputs[output]).producer == reduction_) return reduction_value(n, output, idx);
    switch (op_info(n.op).kind) {
      case OpKind::kElementwise:
      case OpKind::kBroadcast: return elementwise_value(n, idx);
      case OpKind::kInjective: return layout_value(n, output, idx);
      default: unsupported(n, "only elementwise, layout and row-reduction ops fuse");
    }
  }

  ExprId at_broadcast(ValueId in, const std::vector<ExprId>& idx, const std::vector<int64_t>& out) {
    return value_at(in, b_.broadcast_index(idx, out, dims(in)));
  }

  ExprId elementwise_value(const Node& n, const std::vector<ExprId>& idx) {
    const ValueId out = n.outputs[0];
    const std::vector<int64_t> od = dims(out);
    const DType t = dtype(out);
    switch (n.op) {
      case Op::kIdentity:
      case Op::kDropout: return value_at(n.inputs[0], idx);
      case Op::kCast:
      case Op::kCastLike: return b_.cast(value_at(n.inputs[0], idx), t);
      case Op::kClip: {
        const bool is_float = is_floating(t);
        std::vector<ExprId> args{value_at(n.inputs[0], idx)};
        for (size_t i = 1; i <= 2; ++i) {
          if (i < n.inputs.size() && n.inputs[i] != kNoValue) {
            args.push_back(at_broadcast(n.inputs[i], idx, od));
          } else if (!is_float) {
            unsupported(n, "an integer Clip needs both bounds given");
          } else {
            args.push_back(b_.constant(i == 1 ? -INFINITY : INFINITY, t));
          }
        }
        return b_.op(Op::kClip, t, std::move(args), g_.value(out).producer);
      }
      case Op::kBatchNormalization: {
        // Per-channel parameters along dim 1.
        std::vector<ExprId> args{value_at(n.inputs[0], idx)};
        for (size_t i = 1; i < 5; ++i) args.push_back(value_at(n.inputs[i], {idx.size() > 1 ? idx[1] : b_.index_constant(0)}));
        return b_.op(n.op, t, std::move(args), g_.value(out).producer);
      }
      default: {
        if ((n.op == Op::kDiv || n.op == Op::kMod) && !is_floating(t)) refuse_zero_divisor(n);
        std::vector<ExprId> args;
        for (ValueId in : n.inputs) {
          if (in == kNoValue) unsupported(n, "an omitted optional input");
          args.push_back(at_broadcast(in, idx, od));
        }
        return b_.op(n.op, t, std::move(args), g_.value(out).producer);
      }
    }
  }

  // Generated kernels cannot report an error, and the reference fails on an integer division
  // by zero: such a division fuses only when its divisor is a constant with no zero in it.
  void refuse_zero_divisor(const Node& n) const {
    const Value& d = g_.value(n.inputs[1]);
    if (!d.is_constant()) unsupported(n, "an integer division by a run-time value could divide by zero");
    for (int64_t i = 0; i < d.constant.numel(); ++i) {
      if (d.constant.element_as_int(i) == 0) unsupported(n, "an integer division by zero");
    }
  }

  ExprId layout_value(const Node& n, size_t output, const std::vector<ExprId>& idx) {
    const ValueId in = n.inputs[0];
    const std::vector<int64_t> id = dims(in), od = dims(n.outputs[output]);
    std::vector<ExprId> src = idx;
    switch (n.op) {
      case Op::kReshape:
      case Op::kFlatten:
      case Op::kSqueeze:
      case Op::kUnsqueeze:
        return value_at(in, id == od ? idx : b_.delinearize(b_.linearize(idx, od), id));
      case Op::kTranspose: {
        std::vector<int64_t> perm = n.attrs.get_ints("perm");
        if (perm.empty())
          for (size_t d = id.size(); d-- > 0;) perm.push_back(static_cast<int64_t>(d));
        for (size_t d = 0; d < perm.size(); ++d) src[static_cast<size_t>(perm[d])] = idx[d];
        return value_at(in, src);
      }
      case Op::kExpand: return value_at(in, b_.broadcast_index(idx, od, id));
      case Op::kTile:
        for (size_t d = 0; d < id.size(); ++d)
          if (id[d] != od[d]) src[d] = b_.index(IndexOp::kMod, idx[d], b_.index_constant(id[d]));
        return value_at(in, src);
      case Op::kSlice: return value_at(in, slice_index(n, idx, id));
      case Op::kSplit: {
        const int64_t axis = normalized_axis(n, n.attrs.get_int("axis", 0), id.size());
        int64_t offset = 0;
        for (size_t j = 0; j < output; ++j) offset += dims(n.outputs[j])[static_cast<size_t>(axis)];
        src[static_cast<size_t>(axis)] = b_.index(IndexOp::kAdd, idx[static_cast<size_t>(axis)], b_.index_constant(offset));
        return value_at(in, src);
      }
      case Op::kConcat: return concat_value(n, idx);
      case Op::kPad: return pad_value(n, idx);
      case Op::kTrilu: {
        int64_t k = 0;
        if (n.inputs.size() > 1 && n.inputs[1] != kNoValue) k = constant_input(n, 1, "k").element_as_int(0);
        const size_t r = idx.size();
        if (r < 2) unsupported(n, "rank below 2");
        // Keep element (i, j) where j - i >= k (upper) or j - i <= k (lower).
        ExprId diff = b_.index(IndexOp::kSub, idx[r - 1], idx[r - 2]);
        ExprId keep = n.attrs.get_int("upper", 1)
                          ? b_.index(IndexOp::kLessEq, b_.index_constant(k), diff)
                          : b_.index(IndexOp::kLessEq, diff, b_.index_constant(k));
        return b_.select(keep, value_at(in, idx), b_.constant(0, dtype(in)));
      }
      case Op::kGather: return gather_value(n, idx);
      case Op::kGatherElements: return gather_elements_value(n, idx);
      case Op::kGatherND: return gather_nd_value(n, idx);
      default: unsupported(n, "no lowering for this layout op");
    }
  }

  // Gather: out[i_before, j, i_after] = data[i_before, indices[j], i_after], where j spans the
  // indices' dims (none for a scalar index).
  ExprId gather_value(const Node& n, const std::vector<ExprId>& idx) {
    const std::vector<int64_t> dd = dims(n.inputs[0]);
    const auto axis = static_cast<ptrdiff_t>(normalized_axis(n, n.attrs.get_int("axis", 0), dd.size()));
    const auto q = static_cast<ptrdiff_t>(dims(n.inputs[1]).size());
    const std::vector<ExprId> at(idx.begin() + axis, idx.begin() + axis + q);
    std::vector<ExprId> src(idx.begin(), idx.begin() + axis);
    src.push_back(runtime_index(n, n.inputs[1], at, dd[static_cast<size_t>(axis)]));
    src.insert(src.end(), idx.begin() + axis + q, idx.end());
    return value_at(n.inputs[0], src);
  }

  // GatherElements: out[i] = data[i with its `axis` coordinate replaced by indices[i]].
  ExprId gather_elements_value(const Node& n, const std::vector<ExprId>& idx) {
    const std::vector<int64_t> dd = dims(n.inputs[0]);
    const auto axis = static_cast<size_t>(normalized_axis(n, n.attrs.get_int("axis", 0), dd.size()));
    std::vector<ExprId> src = idx;
    src[axis] = runtime_index(n, n.inputs[1], idx, dd[axis]);
    return value_at(n.inputs[0], src);
  }

  // GatherND: out[batch, tuple, slice] = data[batch, indices[batch, tuple, 0..k), slice], with
  // batch_dims axes of batch and k the length of the indices' last axis.
  ExprId gather_nd_value(const Node& n, const std::vector<ExprId>& idx) {
    const std::vector<int64_t> dd = dims(n.inputs[0]), id = dims(n.inputs[1]);
    const auto b = static_cast<ptrdiff_t>(n.attrs.get_int("batch_dims", 0));
    const auto q = static_cast<ptrdiff_t>(id.size());
    const int64_t k = id.back();
    std::vector<ExprId> src(idx.begin(), idx.begin() + b);
    for (int64_t j = 0; j < k; ++j) {
      std::vector<ExprId> at(idx.begin(), idx.begin() + q - 1);  // batch and tuple
      at.push_back(b_.index_constant(j));
      src.push_back(runtime_index(n, n.inputs[1], at, dd[static_cast<size_t>(b + j)]));
    }
    src.insert(src.end(), idx.begin() + q - 1, idx.end());  // slice
    return value_at(n.inputs[0], src);
  }

  // An index read at run time from `indices` at `at`, into an axis of `size`: a negative one
  // counts from the end. The reference interpreter rejects one outside [-size, size); a kernel
  // cannot report it, so it reads the nearest element instead of outside the buffer: the index
  // is clamped into [-size, size) first (so adding size cannot overflow), then wrapped.
  ExprId runtime_index(const Node& n, ValueId indices, const std::vector<ExprId>& at, int64_t size) {
    if (size == 0) unsupported(n, "an axis of size 0 has no element to read");
    const ExprId raw = b_.cast(value_at(indices, at), DType::kI64);
    const ExprId c = b_.index(IndexOp::kMax, b_.index_constant(-size),
                              b_.index(IndexOp::kMin, raw, b_.index_constant(size - 1)));
    return b_.select(b_.index(IndexOp::kLess, c, b_.index_constant(0)),
                     b_.index(IndexOp::kAdd, c, b_.index_constant(size)), c);
  }

  int64_t normalized_axis(const Node& n, int64_t axis, size_t rank) const {
    return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
  }

  std::vector<ExprId> slice_index(const Node& n, const std::vector<ExprId>& idx,
                                  const std::vector<int64_t>& id) {
    const std::vector<int64_t> starts = constant_input(n, 1, "starts").to_int_vector();
    const std::vector<int64_t> ends = constant_input(n, 2, "ends").to_int_vector();
    std::vector<int64_t> axes, steps;
    if (n.inputs.size() > 3 && n.inputs[3] != kNoValue) axes = constant_input(n, 3, "axes").to_int_vector();
    if (n.inputs.size() > 4 && n.inputs[4] != kNoValue) steps = constant_input(n, 4, "steps").to_int_vector();
    std::vector<ExprId> src = idx;
    for (size_t i = 0; i < starts.size(); ++i) {
      const int64_t a = normalized_axis(n, axes.empty() ? static_cast<int64_t>(i) : axes[i], id.size());
      const layout::SliceAxis s = layout::resolve_slice_axis(
          id[static_cast<size_t>(a)], starts[i], ends[i], steps.empty() ? 1 : steps[i]);
      src[static_cast<size_t>(a)] =
          b_.index(IndexOp::kAdd, b_.index_constant(s.start),
                   b_.index(IndexOp::kMul, idx[static_cast<size_t>(a)], b_.index_constant(s.step)));
    }
    return src;
  }

  ExprId concat_value(const Node& n, const std::vector<ExprId>& idx) {
    const size_t rank = idx.size();
    const auto axis = static_cast<size_t>(normalized_axis(n, n.attrs.get_int("axis", 0), rank));
    // Select from the last input backwards; each branch reads a clamped (always valid) index.
    std::vector<std::pair<ValueId, int64_t>> parts;  // input, offset
    int64_t offset = 0;
    for (ValueId in : n.inputs) {
      const int64_t len = dims(in)[axis];
      if (len > 0) parts.emplace_back(in, offset);
      offset += len;
    }
    ExprId result = -1;
    for (size_t p = parts.size(); p-- > 0;) {
      const auto [in, off] = parts[p];
      std::vector<ExprId> src = idx;
      ExprId local = b_.index(IndexOp::kSub, idx[axis], b_.index_constant(off));
      src[axis] = b_.index(IndexOp::kMax, b_.index_constant(0),
                           b_.index(IndexOp::kMin, local, b_.index_constant(dims(in)[axis] - 1)));
      ExprId v = value_at(in, src);
      result = result < 0 ? v : b_.select(b_.index(IndexOp::kLess, local, b_.index_constant(dims(in)[axis])), v, result);
    }
    GF_ASSERT(result >= 0, "Concat with no elements along its axis has nothing to store");
    return result;
  }

  ExprId pad_value(const Node& n, const std::vector<ExprId>& idx) {
    const ValueId in = n.inputs[0];
    const std::vector<int64_t> id = dims(in);
    const auto rank = static_cast<int64_t>(id.size());
    std::vector<int64_t> axes;
    if (n.inputs.size() > 3 && n.inputs[3] != kNoValue) axes = constant_input(n, 3, "axes").to_int_vector();
    const std::vector<int64_t> pads =
        layout::pads_for_all_axes(constant_input(n, 1, "pads").to_int_vector(), axes, rank);
    const std::string mode = n.attrs.get_string("mode", "constant");
    double fill = 0;
    if (n.inputs.size() > 2 && n.inputs[2] != kNoValue) fill = constant_input(n, 2, "constant_value").element_as_double(0);
    std::vector<ExprId> src(id.size());
    ExprId inside = -1;
    for (size_t d = 0; d < id.size(); ++d) {
      const int64_t begin = pads[d];
      const int64_t size = id[d];
      ExprId s = b_.index(IndexOp::kSub, idx[d], b_.index_constant(begin));
      if (begin == 0 && pads[d + id.size()] == 0) {
        src[d] = s;
        continue;
      }
      if (mode != "constant" && (begin < 0 || pads[d + id.size()] < 0)) unsupported(n, "negative pads outside constant mode");
      auto clamp = [&](ExprId e) {
        return b_.index(IndexOp::kMax, b_.index_constant(0), b_.index(IndexOp::kMin, e, b_.index_constant(size - 1)));
      };
      auto positive_mod = [&](ExprId e, int64_t m) {
        return b_.index(IndexOp::kMod, b_.index(IndexOp::kAdd, b_.index(IndexOp::kMod, e, b_.index_constant(m)), b_.index_constant(m)), b_.index_constant(m));
      };
      if (mode == "constant") {
        ExprId ok = b_.index(IndexOp::kAnd, b_.index(IndexOp::kLessEq, b_.index_constant(0), s),
                             b_.index(IndexOp::kLess, s, b_.index_constant(size)));
        inside = inside < 0 ? ok : b_.index(IndexOp::kAnd, inside, ok);
        src[d] = clamp(s);
      } else if (mode == "edge") {
        src[d] = clamp(s);
      } else if (mode == "wrap") {
        src[d] = positive_mod(s, size);
      } else if (mode == "reflect") {
        if (size == 1) {
          src[d] = b_.index_constant(0);
        } else {
          const int64_t period = 2 * (size - 1);
          ExprId m = positive_mod(s, period);
          src[d] = b_.select(b_.index(IndexOp::kLess, m, b_.index_constant(size)), m,
                             b_.index(IndexOp::kSub, b_.index_constant(period), m));
        }
      } else {
        unsupported(n, "pad mode '" + mode + "'");
      }
    }
    ExprId v = value_at(in, src);
    return inside < 0 ? v : b_.select(inside, v, b_.constant(fill, dtype(in)));
  }

  // --- row reductions -------------------------------------------------------------------------

  DType accumulate_type(DType t) const {
    if (t == DType::kF64) return DType::kF64;
    return is_floating(t) ? DType::kF32 : DType::kI64;
  }

  ExprId reduce(ReduceKind kind, DType acc, ExprId value) {
    const int r = static_cast<int>(k_.reductions.size());
    k_.reductions.push_back(RowReduction{kind, acc, value});
    return b_.row(r, acc);
  }

  ExprId reduction_value(const Node& a, size_t output, const std::vector<ExprId>& idx) {
    if (row_values_.empty()) build_rows(a);
    const DType t = dtype(a.outputs[output]);
    const DType acc = accumulate_type(dtype(a.inputs[0]));
    auto c = [&](double v) { return b_.constant(v, acc); };
    switch (a.op) {
      case Op::kSoftmax:
      case Op::kLogSoftmax: {
        ExprId shifted = b_.op(Op::kSub, acc, {b_.cast(value_at(a.inputs[0], idx), acc), row_values_[0]});
        ExprId y = a.op == Op::kSoftmax
                       ? b_.op(Op::kDiv, acc, {b_.op(Op::kExp, acc, {shifted}), row_values_[1]})
                       : b_.op(Op::kSub, acc, {shifted, b_.op(Op::kLog, acc, {row_values_[1]})});
        return b_.cast(y, t);
      }
      case Op::kLayerNormalization: {
        const float eps = a.attrs.get_float("epsilon", 1e-5f);
        ExprId mean = row_values_[0];
        ExprId inv_std = b_.op(Op::kReciprocal, acc, {b_.op(Op::kSqrt, acc, {b_.op(Op::kAdd, acc, {row_values_[1], c(eps)})})});
        if (output == 1) return b_.cast(mean, t);
        if (output == 2) return b_.cast(inv_std, t);
        ExprId y = b_.op(Op::kMul, acc, {b_.op(Op::kSub, acc, {b_.cast(value_at(a.inputs[0], idx), acc), mean}), inv_std});
        y = b_.op(Op::kMul, acc, {y, b_.cast(at_broadcast(a.inputs[1], idx, x_dims_), acc)});
        if (a.inputs.size() > 2 && a.inputs[2] != kNoValue) y = b_.op(Op::kAdd, acc, {y, b_.cast(at_broadcast(a.inputs[2], idx, x_dims_), acc)});
        return b_.cast(y, t);
      }
      case Op::kRMSNormalization: {
        const float eps = a.attrs.get_float("epsilon", 1e-5f);
        ExprId inv = b_.op(Op::kReciprocal, acc, {b_.op(Op::kSqrt, acc, {b_.op(Op::kAdd, acc, {row_values_[0], c(eps)})})});
        ExprId y = b_.op(Op::kMul, acc, {b_.cast(value_at(a.inputs[0], idx), acc), inv});
        y = b_.op(Op::kMul, acc, {y, b_.cast(at_broadcast(a.inputs[1], idx, x_dims_), acc)});
        return b_.cast(y, t);
      }
      default: return b_.cast(row_values_[0], t);  // Reduce*: the row value is the result
    }
  }

  // The row values of the anchor, built once: everything its outputs need per outer point.
  void build_rows(const Node& a) {
    const DType in_t = dtype(a.inputs[0]);
    const DType acc = accumulate_type(in_t);
    const std::vector<ExprId> full = full_index();
    const ExprId x = b_.cast(value_at(a.inputs[0], full), acc);
    const auto n = static_cast<double>(k_.inner_size());
    auto c = [&](double v) { return b_.constant(v, acc); };
    auto divide_by_n = [&](ExprId e) {
      if (!is_floating(acc) && n == 0) unsupported(a, "an integer mean over no elements");
      return b_.op(Op::kDiv, acc, {e, c(n)});
    };
    switch (a.op) {
      case Op::kSoftmax:
      case Op::kLogSoftmax: {
        ExprId m = reduce(ReduceKind::kMax, acc, x);
        ExprId s = reduce(ReduceKind::kSum, acc, b_.op(Op::kExp, acc, {b_.op(Op::kSub, acc, {x, m})}));
        row_values_ = {m, s};
        break;
      }
      case Op::kLayerNormalization: {
        ExprId mean = divide_by_n(reduce(ReduceKind::kSum, acc, x));
        ExprId d = b_.op(Op::kSub, acc, {x, mean});
        ExprId var = divide_by_n(reduce(ReduceKind::kSum, acc, b_.op(Op::kMul, acc, {d, d})));
        row_values_ = {mean, var};
        break;
      }
      case Op::kRMSNormalization:
        row_values_ = {divide_by_n(reduce(ReduceKind::kSum, acc, b_.op(Op::kMul, acc, {x, x})))};
        break;
      case Op::kReduceSum: row_values_ = {reduce(ReduceKind::kSum, acc, x)}; break;
      case Op::kReduceMean: row_values_ = {divide_by_n(reduce(ReduceKind::kSum, acc, x))}; break;
      case Op::kReduceMax: row_values_ = {reduce(ReduceKind::kMax, acc, x)}; break;
      case Op::kReduceMin: row_values_ = {reduce(ReduceKind::kMin, acc, x)}; break;
      case Op::kReduceProd: row_values_ = {reduce(ReduceKind::kProd, acc, x)}; break;
      case Op::kReduceL1: row_values_ = {reduce(ReduceKind::kSum, acc, b_.op(Op::kAbs, acc, {x}))}; break;
      case Op::kReduceSumSquare: row_values_ = {reduce(ReduceKind::kSum, acc, b_.op(Op::kMul, acc, {x, x}))}; break;
      case Op::kReduceL2:
        row_values_ = {b_.op(Op::kSqrt, acc, {reduce(ReduceKind::kSum, acc, b_.op(Op::kMul, acc, {x, x}))})};
        break;
      case Op::kReduceLogSum:
        row_values_ = {b_.op(Op::kLog, acc, {reduce(ReduceKind::kSum, acc, x)})};
        break;
      case Op::kReduceLogSumExp: {
        // max + log(sum(exp(x - max))); an infinite max is the answer itself.
        ExprId m = reduce(ReduceKind::kMax, acc, x);
        ExprId s = reduce(ReduceKind::kSum, acc, b_.op(Op::kExp, acc, {b_.op(Op::kSub, acc, {x, m})}));
        row_values_ = {b_.select(b_.op(Op::kIsInf, DType::kBool, {m}), m,
                                 b_.op(Op::kAdd, acc, {m, b_.op(Op::kLog, acc, {s})}))};
        break;
      }
      default: unsupported(a, "not a row reduction");
    }
    if (!is_floating(in_t) && a.op != Op::kReduceSum && a.op != Op::kReduceMax &&
        a.op != Op::kReduceMin && a.op != Op::kReduceProd && a.op != Op::kReduceMean) {
      unsupported(a, "integer data");
    }
  }

  const Graph& g_;
  const Group& group_;
  FusedKernel& k_;
  KernelBuilder b_;
  std::set<NodeId> in_group_;
  NodeId reduction_ = kNoNode;
  std::vector<int64_t> x_dims_;
  std::vector<bool> reduced_;
  std::vector<ExprId> row_values_;
  std::map<ValueId, int> buffers_;
  std::map<std::pair<ValueId, std::vector<ExprId>>, ExprId> memo_;
};

}  // namespace

FusedKernel lower_group(const Graph& g, const Group& group, const std::string& kernel_name) {
  if (group.kind == GroupKind::kView || group.kind == GroupKind::kOpaque) {
    throw Error(ErrorCode::kUnsupported, "a " + std::string(group_kind_name(group.kind)) +
                                             " group has no fused kernel");
  }
  FusedKernel k;
  k.name = kernel_name;
  GroupLowering(g, group, k).run();
  return k;
}

}  // namespace gf::fusion
