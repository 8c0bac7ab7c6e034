#include "passes/convert_precision.h"

#include <algorithm>
#include <string>

#include "graphfuse/error.h"

namespace gf {

namespace {

// A whole model's weights pass through here when a session compiles its first program (a
// second of one core for GPT-2 small): the elements are split over the cores.
Tensor convert_tensor(const Tensor& t, DType target) {
  Tensor out(target, t.dims());
  const float* in = t.data<float>();
  const int64_t n = t.numel();
  constexpr int64_t kSerialBelow = int64_t{1} << 16;
  if (target == DType::kF16) {
    Half* o = out.data<Half>();
#pragma omp parallel for schedule(static) if (n >= kSerialBelow)
    for (int64_t i = 0; i < n; ++i) o[i] = Half(in[i]);
  } else {
    BFloat16* o = out.data<BFloat16>();
#pragma omp parallel for schedule(static) if (n >= kSerialBelow)
    for (int64_t i = 0; i < n; ++i) o[i] = BFloat16(in[i]);
  }
  return out;
}

}  // namespace

Tensor ConvertedConstants::convert(const Tensor& t, DType target) {
  const std::shared_ptr<void>& source = t.storage();
  if (!source) return convert_tensor(t, target);
  std::lock_guard lock(mutex_);
  const auto key = std::make_tuple(t.raw(), t.nbytes(), target);
  if (auto it = entries_.find(key); it != entries_.end()) {
    std::shared_ptr<void> result = it->second.result.lock();
    if (result && !it->second.source.expired())
      return Tensor::wrap(target, t.dims(), std::move(result), it->second.result_data);
    entries_.erase(it);
  }
  std::erase_if(entries_, [](const auto& e) { return e.second.source.expired() || e.second.result.expired(); });
  Tensor converted = convert_tensor(t, target);
  entries_[key] = Entry{source, converted.storage(), converted.raw()};
  return converted;
}

namespace {

class Converter {
 public:
  Converter(const Graph& g, DType target, ConvertedConstants* memo)
      : g_(g), target_(target), memo_(memo), same_(g.num_values(), kNoValue), low_(g.num_values(), kNoValue),
        is_output_(g.num_values(), false) {
    for (ValueId v : g.outputs()) is_output_[static_cast<size_t>(v)] = true;
  }

  Graph run(int& converted) {
    out_.name = g_.name;
    for (ValueId v : g_.inputs()) same_[idx(v)] = out_.add_input(g_.value(v).name, g_.value(v).type);
    for (NodeId id : g_.topological_order()) converted += add_node(g_.node(id)) ? 1 : 0;
    for (ValueId v : g_.outputs()) out_.add_output(get_same(v));
    infer_shapes(out_);
    return std::move(out_);
  }

 private:
  static size_t idx(ValueId v) { return static_cast<size_t>(v); }
  bool is_f32(ValueId v) const { return g_.value(v).type.dtype == DType::kF32; }
  std::string suffix() const { return "/" + std::string(dtype_name(target_)); }

  // `v` in its original dtype.
  ValueId get_same(ValueId v) {
    ValueId& s = same_[idx(v)];
    if (s != kNoValue) return s;
    const Value& val = g_.value(v);
    if (val.is_constant()) return s = out_.add_constant(val.name, val.constant);
    GF_ASSERT(low_[idx(v)] != kNoValue, "a value is read before it is made");
    // A graph output gets its own name back on the Cast to f32.
    const std::string name = is_output_[idx(v)] ? val.name : out_.unique_value_name(val.name + "/f32");
    const NodeId cast = out_.add_node(Op::kCast, out_.unique_node_name(val.name + "/to_f32"), {low_[idx(v)]},
                                      {name}, Attributes{{"to", static_cast<int64_t>(DType::kF32)}});
    return s = out_.node(cast).outputs[0];
  }

  // An f32 `v` in the target dtype.
  ValueId get_low(ValueId v) {
    ValueId& l = low_[idx(v)];
    if (l != kNoValue) return l;
    const Value& val = g_.value(v);
    if (val.is_constant()) {
      const Tensor low = memo_ ? memo_->convert(val.constant, target_) : convert_tensor(val.constant, target_);
      return l = out_.add_constant(out_.unique_value_name(val.name + suffix()), low);
    }
    const NodeId cast = out_.add_node(Op::kCast, out_.unique_node_name(val.name + "/to" + suffix()),
                                      {get_same(v)}, {out_.unique_value_name(val.name + suffix())},
                                      Attributes{{"to", static_cast<int64_t>(target_)}});
    return l = out_.node(cast).outputs[0];
  }

  bool add_node(const Node& n) {
    bool touches_f32 = false;
    for (ValueId v : n.inputs) touches_f32 = touches_f32 || (v != kNoValue && is_f32(v));
    for (ValueId v : n.outputs) touches_f32 = touches_f32 || is_f32(v);
    const bool convert = touches_f32 && !keeps_f32(n);
    std::vector<ValueId> inputs;
    for (ValueId v : n.inputs) {
      inputs.push_back(v == kNoValue ? kNoValue : (convert && is_f32(v)) ? get_low(v) : get_same(v));
    }
    Attributes attrs = n.attrs;
    if (convert && n.op == Op::kCast) attrs.set("to", static_cast<int64_t>(target_));
    std::vector<std::string> names;
    for (ValueId v : n.outputs) {
      const std::string& name = g_.value(v).name;
      const bool low = convert && is_f32(v);
      // A converted graph output leaves its name to the Cast that restores f32.
      names.push_back(low && is_output_[idx(v)] ? out_.unique_value_name(name + suffix()) : name);
    }
    const NodeId id = out_.add_node(n.op, n.name, inputs, names, attrs);
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      const ValueId v = n.outputs[i];
      (convert && is_f32(v) ? low_ : same_)[idx(v)] = out_.node(id).outputs[i];
    }
    return convert;
  }

  const Graph& g_;
  DType target_;
  ConvertedConstants* memo_;
  Graph out_;
  std::vector<ValueId> same_, low_;
  std::vector<bool> is_output_;
};

}  // namespace

bool keeps_f32(const Node& node) {
  switch (node.op) {
    case Op::kReduceSum:
    case Op::kReduceProd:
    case Op::kReduceSumSquare:
    case Op::kReduceL1:
    case Op::kReduceL2:
    case Op::kReduceLogSum:
    case Op::kReduceLogSumExp:
    case Op::kCumSum:
    case Op::kExp:
    case Op::kPow:
    case Op::kConstantOfShape:
    case Op::kRange: return true;
    case Op::kCast: {
      const auto to = static_cast<DType>(node.attrs.get_int("to", static_cast<int64_t>(DType::kF32)));
      return to != DType::kF32;  // other targets read their input at full precision
    }
    default: return false;
  }
}

int convert_precision(Graph& g, DType target, ConvertedConstants* memo) {
  if (target != DType::kF16 && target != DType::kBF16) {
    throw Error(ErrorCode::kInvalidArgument,
                "convert_precision: target must be f16 or bf16, got " + std::string(dtype_name(target)));
  }
  int converted = 0;
  g = Converter(g, target, memo).run(converted);
  return converted;
}

}  // namespace gf
