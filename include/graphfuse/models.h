// Built-in models with random weights, built through the C++ API: the demo, tests and
// benchmarks use them.
//
// Thread safety: each builder makes a new graph from its config (weights from the config's seed)
// and shares nothing; safe on any thread.
#pragma once

#include <cstdint>

#include "graphfuse/graph.h"

namespace gf::models {

// A GPT-2-style decoder stack: per layer LayerNorm -> QKV projection -> causal attention ->
// output projection -> residual add -> LayerNorm -> MLP (GELU, tanh form) -> residual add;
// a final LayerNorm. Input "x": [batch, seq, d_model] with symbolic batch and seq dims;
// output "y" of the same shape.
struct Gpt2Config {
  int64_t layers = 4;
  int64_t d_model = 256;
  int64_t heads = 4;
  int64_t mlp_ratio = 4;
  DType dtype = DType::kF32;
  uint64_t seed = 1234;
};

Graph gpt2_stack(const Gpt2Config& config);

}  // namespace gf::models
