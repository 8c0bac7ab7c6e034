// The Attention anchor kernel: the node's shapes, layout and attributes as constants ahead of
// kernels/attention.cuh (flash-style, online softmax; see there).
#include <algorithm>
#include <cmath>

#include "codegen/cuda/anchor_kernels_impl.h"
#include "codegen/cuda/anchor_writer.h"
#include "codegen/cuda/kernels/attention_cuh.h"

namespace gf::codegen {

namespace {

// Query rows per block (one warp each): K/V tiles are shared by this many rows.
constexpr int64_t kMaxWarps = 8;
// Static shared memory of one block stays within the 48 KiB every launch gets without opting in.
constexpr int64_t kSharedBudget = 48 * 1024;
// Output columns per lane live in registers: at most 16 (head sizes up to 512).
constexpr int64_t kMaxValueHeadDim = 512;
constexpr int64_t kMaxHeadDim = 1024;

// Element strides (batch, head, position) of a [B, H, S, D]-indexed view of a 4-D tensor or of a
// packed 3-D [B, S, H*D] one; the head_dim stride is 1.
struct HeadStrides {
  int64_t batch, head, pos;
};

HeadStrides head_strides(bool packed, int64_t heads, int64_t len, int64_t dim) {
  if (packed) return {len * heads * dim, dim, heads * dim};
  return {heads * len * dim, len * dim, dim};
}

void write_strides(anchor::AnchorWriter& w, const std::string& prefix, const HeadStrides& s) {
  w.constant(prefix + "StrideB", s.batch);
  w.constant(prefix + "StrideH", s.head);
  w.constant(prefix + "StrideS", s.pos);
}

std::string shape_string(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

}  // namespace

CudaKernelSource emit_attention_kernel(const Node& node, const Graph& g, const std::string& name,
                                       const CudaEmitOptions& options) {
  using anchor::unsupported;
  if (node.inputs.size() < 3 || node.outputs.size() != 1) {
    unsupported(node, g, "only Q, K, V, an optional mask and one output are handled");
  }
  for (size_t i = 4; i < node.inputs.size(); ++i) {
    if (node.inputs[i] != kNoValue) unsupported(node, g, "past key/value inputs are not handled");
  }
  const DType dtype = g.value(node.inputs[0]).type.dtype;
  anchor::expect_float_storage(node, g, dtype);
  const std::vector<int64_t> q = anchor::static_dims(node, g, node.inputs[0]);
  const std::vector<int64_t> k = anchor::static_dims(node, g, node.inputs[1]);
  const std::vector<int64_t> v = anchor::static_dims(node, g, node.inputs[2]);
  const Attributes& attrs = node.attrs;
  if (attrs.get_int("qk_matmul_output_mode", 0) != 0) {
    unsupported(node, g, "qk_matmul_output_mode other than 0");
  }

  // The dims as the reference reads them (runtime/cpu/reference/attention.cpp).
  const bool packed = q.size() == 3;
  int64_t batch = 0, q_heads = 0, kv_heads = 0, q_len = 0, kv_len = 0, head_dim = 0, v_dim = 0;
  if (q.size() == 4) {
    batch = q[0], q_heads = q[1], kv_heads = k[1], q_len = q[2], kv_len = k[2], head_dim = q[3];
    v_dim = v[3];
  } else if (packed) {
    q_heads = attrs.get_int("q_num_heads", 1);
    kv_heads = attrs.get_int("kv_num_heads", 1);
    if (q_heads < 1 || kv_heads < 1) unsupported(node, g, "head counts below 1");
    batch = q[0], q_len = q[1], kv_len = k[1], head_dim = q[2] / q_heads, v_dim = v[2] / kv_heads;
  } else {
    unsupported(node, g, "Q of rank " + std::to_string(q.size()));
  }
  if (kv_heads < 1 || q_heads % kv_heads != 0) {
    unsupported(node, g, "query heads not a multiple of the key/value heads");
  }
  const std::string shapes = "Q " + shape_string(q) + ", K " + shape_string(k) + ", V " +
                             shape_string(v);
  if (head_dim > kMaxHeadDim || v_dim > kMaxValueHeadDim) {
    unsupported(node, g, "head size " + std::to_string(head_dim) + " / value head size " +
                             std::to_string(v_dim) + " above " + std::to_string(kMaxHeadDim) +
                             " / " + std::to_string(kMaxValueHeadDim) + " (" + shapes + ")");
  }

  // Tiles: as many query rows (warps) as there are rows, up to kMaxWarps; the largest K/V tile
  // (at most one key per lane) whose floats fit the shared-memory budget.
  const int64_t warps = std::clamp<int64_t>(q_len, 1, kMaxWarps);
  const int64_t k_stride = head_dim | 1;  // odd: no bank conflicts (see attention.cuh)
  const int64_t d_padded = std::max<int64_t>(head_dim, 1), dv_padded = std::max<int64_t>(v_dim, 1);
  int64_t tile_keys = 32;
  while (tile_keys > 1 &&
         4 * (warps * d_padded + tile_keys * (k_stride + dv_padded)) > kSharedBudget) {
    tile_keys /= 2;
  }
  if (4 * (warps * d_padded + tile_keys * (k_stride + dv_padded)) > kSharedBudget) {
    unsupported(node, g, "head sizes too large for the shared-memory tiles (" + shapes + ")");
  }

  const int64_t blocks = batch * q_heads * ((q_len + warps - 1) / warps);
  const int64_t y_numel = batch * q_heads * q_len * v_dim;
  if (blocks > int64_t{0x7fffffff}) unsupported(node, g, "too many query tiles (" + shapes + ")");

  anchor::AnchorWriter w(node, g, name, "attention (flash-style, one warp per query row)");
  w.element_type(dtype);
  w.constant("kThreads", 32 * warps);
  w.constant("kWarps", warps);
  w.constant("kTileKeys", tile_keys);
  w.constant("kKStride", k_stride);
  w.constant("kB", batch);
  w.constant("kHq", q_heads);
  w.constant("kGroup", q_heads / kv_heads);
  w.constant("kSq", q_len);
  w.constant("kSkv", kv_len);
  w.constant("kD", head_dim);
  w.constant("kDv", v_dim);
  write_strides(w, "kQ", head_strides(packed, q_heads, q_len, head_dim));
  write_strides(w, "kK", head_strides(packed, kv_heads, kv_len, head_dim));
  write_strides(w, "kV", head_strides(packed, kv_heads, kv_len, v_dim));
  write_strides(w, "kY", head_strides(packed, q_heads, q_len, v_dim));
  // ONNX scales Q and K by sqrt(scale) each, rounded to float (as the reference).
  const double scale = attrs.has("scale") ? static_cast<double>(attrs.get_float("scale", 0.0f))
                                          : 1.0 / std::sqrt(static_cast<double>(head_dim));
  w.constant_f32("kRootScale", static_cast<float>(std::sqrt(scale)));
  w.constant_f32("kSoftcap", std::max(attrs.get_float("softcap", 0.0f), 0.0f));
  w.flag("kCausal", attrs.get_int("is_causal", 0) != 0);

  const bool has_mask = node.inputs.size() > 3 && node.inputs[3] != kNoValue;
  w.flag("kHasMask", has_mask);
  std::vector<int64_t> mask_strides(4, 0);
  int64_t mask_columns = 0;
  DType mask_dtype = dtype;
  if (has_mask) {
    mask_dtype = g.value(node.inputs[3]).type.dtype;
    if (mask_dtype != DType::kBool && mask_dtype != dtype) {
      unsupported(node, g, "attn_mask of dtype " + std::string(dtype_name(mask_dtype)));
    }
    const std::vector<int64_t> m = anchor::static_dims(node, g, node.inputs[3]);
    if (m.empty() || m.size() > 4) unsupported(node, g, "attn_mask of rank " + std::to_string(m.size()));
    mask_columns = m.back();
    // Right-aligned broadcast to [B, Hq, Sq, columns]: size-1 dims repeat (stride 0).
    int64_t stride = 1;
    for (size_t i = m.size(); i-- > 0;) {
      mask_strides[4 - m.size() + i] = m[i] == 1 ? 0 : stride;
      stride *= m[i];
    }
  }
  w.flag("kMaskIsBool", mask_dtype == DType::kBool);
  w.typedef_storage(mask_dtype, "gf_mask_elem");
  w.constant("kMaskColumns", mask_columns);
  w.constant("kMaskStrideB", mask_strides[0]);
  w.constant("kMaskStrideH", mask_strides[1]);
  w.constant("kMaskStrideS", mask_strides[2]);
  w.constant("kMaskStrideJ", mask_strides[3]);

  LaunchConfig launch;
  launch.block = static_cast<uint32_t>(32 * warps);
  launch.grid = y_numel == 0 ? 0 : static_cast<uint32_t>(blocks);
  (void)options;  // one block per query tile: the grid does not depend on the SM count
  return w.finish(embedded::attention_cuh, "gf_attention", launch);
}

}  // namespace gf::codegen
