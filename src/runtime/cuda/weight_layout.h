// How the CUDA executor lays out the weights of products on the device. A constant W [k, n]
// that only MatMuls and Gemms without transB read, as their B (torch.onnx exports GPT-2's
// Conv1D layers as Gemm, BERT's Linear layers as MatMul, both with W [k, n]), is uploaded as
// W^T [n, k] and its products run with trans_b (plan_gemm): the skinny GEMM kernel streams [n, k]
// weights faster than [k, n] (skinny_gemm_step.h), cuBLASLt takes trans_b at full speed, and the
// session holds one device copy of the weight, in that one layout. The graph and its host constants
// stay as they are: host steps, the CPU and the precision memo see the weight the model gave.
#pragma once

#include "graphfuse/graph.h"
#include "graphfuse/tensor.h"
#include "ir/tensor_transpose.h"  // transpose_matrix, for the upload

namespace gf::cuda {

// Whether constant `w` of `g` is stored transposed on the device: a 2-D f32, f16 or bf16
// constant with elements, no graph output, read by at least one node and only as the B (and
// nothing else) of MatMuls and transB = 0 Gemms whose A has w's dtype. plan_gemm reads it with
// trans_b in each of them, so no step reads W's [k, n] bytes on the device. (A Gemm that
// plan_gemm refuses runs on the host, which reads the graph's constant.)
bool stores_transposed(const Graph& g, ValueId w);

}  // namespace gf::cuda
