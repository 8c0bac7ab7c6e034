// ONNX's Attention (opsets 23 to 25) onto our fused Attention op, which implements the form
// without a KV cache: Q, K, V and an optional attn_mask in, Y out. A node that uses anything
// else (a cache, per-batch valid lengths, the extra outputs, a sliding window) is refused with
// kUnsupported naming the feature, never imported with other semantics.
#include <iterator>
#include <string>
#include <vector>

#include "onnx/onnx_nodes.h"

namespace gf::onnx_import {

namespace {

// The optional inputs and outputs past the ones we keep, with what each one is for.
struct Slot {
  const char* name;
  const char* feature;
};
constexpr size_t kKeptInputs = 4;  // Q, K, V, attn_mask
constexpr Slot kExtraInputs[] = {{"past_key", "KV cache"},
                                 {"past_value", "KV cache"},
                                 {"nonpad_kv_seqlen", "per-batch valid key lengths"}};
constexpr Slot kExtraOutputs[] = {{"present_key", "KV cache"},
                                  {"present_value", "KV cache"},
                                  {"qk_matmul_output", "the attention scores"}};

std::string describe_slot(const char* kind, size_t extra, const Slot* slots, size_t num_slots) {
  if (extra >= num_slots) return std::string(kind) + " #" + std::to_string(extra);
  return std::string(kind) + " '" + slots[extra].name + "' (" + slots[extra].feature + ")";
}

}  // namespace

std::vector<std::string> attention_unsupported_features(const onnx::NodeProto& node) {
  std::vector<std::string> out;
  for (int i = static_cast<int>(kKeptInputs); i < node.input_size(); ++i) {
    if (node.input(i).empty()) continue;
    out.push_back(describe_slot("input", static_cast<size_t>(i) - kKeptInputs, kExtraInputs,
                                std::size(kExtraInputs)));
  }
  for (int i = 1; i < node.output_size(); ++i) {
    if (node.output(i).empty()) continue;
    out.push_back(describe_slot("output", static_cast<size_t>(i) - 1, kExtraOutputs,
                                std::size(kExtraOutputs)));
  }
  // Opset 25's sliding window: -1 (the default) leaves a side unbounded, i.e. no window.
  for (const auto& a : node.attribute()) {
    if ((a.name() == "left_window_size" || a.name() == "right_window_size") && a.i() != -1) {
      out.push_back(a.name() + "=" + std::to_string(a.i()) + " (sliding window)");
    }
  }
  return out;
}

void convert_attention(PendingNode& n) {
  const std::vector<std::string> features = attention_unsupported_features(n.proto);
  if (!features.empty()) {
    std::string list;
    for (const std::string& f : features) list += (list.empty() ? "" : ", ") + f;
    throw Error(ErrorCode::kUnsupported,
                n.what + " uses what graphfuse's Attention does not support: " + list +
                    " (it takes Q, K, V and attn_mask and gives Y only)");
  }
  if (n.inputs.size() > kKeptInputs) n.inputs.resize(kKeptInputs);  // all omitted (checked)
  n.outputs.resize(1);
  // The mode only selects what the absent qk_matmul_output holds.
  n.attrs.erase("qk_matmul_output_mode");
  n.attrs.erase("left_window_size");
  n.attrs.erase("right_window_size");
}

}  // namespace gf::onnx_import
