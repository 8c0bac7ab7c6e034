// Grouped-query attention kept grouped: the repeat_kv that Llama-style models apply to K and V
// before attention (transformers' repeat_kv, as torch.onnx emits it),
//   X [B, Hkv, S, D] -> Unsqueeze(axes = [2]) -> [B, Hkv, 1, S, D]
//     -> Expand -> [B, Hkv, G, S, D] -> Reshape -> [B, Hkv * G, S, D],
// feeding both the K and the V input of a 4-D Attention node, is dropped: the node reads the
// Hkv heads of K and V directly (ONNX Attention maps query head h to key/value head h / G,
// the head that repeat_kv copies there). The expanded copies are no longer made; the chains
// disappear when nothing else reads them.
//
// Rewritten only when exact: both K and V come through such a chain with the same group G > 1,
// every dim but the head dim unchanged along it (static, or the same symbol), and Hkv and G
// static.
#pragma once

#include "graphfuse/graph.h"

namespace gf {

// Returns the number of Attention nodes that now read grouped K and V.
int fold_repeated_kv(Graph& g);

}  // namespace gf
