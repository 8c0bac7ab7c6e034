// The Attention anchor kernels: the node read once (read_attention_node), then the tensor-core
// kernel where it fits (anchor_attention_mma.cpp), the split-KV decode kernel where that fits
// (anchor_attention_decode.cpp), or the general one here: the node's shapes, layout and
// attributes as constants ahead of kernels/attention.cuh (one warp per query row).
#include "codegen/cuda/anchor_attention.h"

#include <algorithm>
#include <cmath>

#include "codegen/cuda/anchor_kernels_impl.h"
#include "codegen/cuda/kernels/attention_common_cuh.h"
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

HeadStrides head_strides(bool packed, int64_t heads, int64_t len, int64_t dim) {
  if (packed) return {len * heads * dim, dim, heads * dim};
  return {heads * len * dim, len * dim, dim};
}

void write_strides(anchor::AnchorWriter& w, const std::string& prefix, const HeadStrides& s) {
  w.constant(prefix + "StrideB", s.batch);
  w.constant(prefix + "StrideH", s.head);
  w.constant(prefix + "StrideS", s.pos);
  w.constant(prefix + "Offset", s.offset);
}

std::string shape_string(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

CudaKernelSource emit_row_attention_kernel(const Node& node, const Graph& g, const AttentionNode& a,
                                           const std::string& name) {
  using anchor::unsupported;
  if (a.head_dim > kMaxHeadDim || a.v_dim > kMaxValueHeadDim) {
    unsupported(node, g, "head size " + std::to_string(a.head_dim) + " / value head size " +
                             std::to_string(a.v_dim) + " above " + std::to_string(kMaxHeadDim) +
                             " / " + std::to_string(kMaxValueHeadDim) + " (" + a.shapes + ")");
  }
  // Tiles: as many query rows (warps) as there are rows, up to kMaxWarps; the largest K/V tile
  // (at most one key per lane, and no more than the keys) whose floats fit the shared-memory
  // budget.
  const int64_t warps = std::clamp<int64_t>(a.q_len, 1, kMaxWarps);
  const int64_t k_stride = a.head_dim | 1;  // odd: no bank conflicts (see attention.cuh)
  const int64_t d_padded = std::max<int64_t>(a.head_dim, 1);
  const int64_t dv_padded = std::max<int64_t>(a.v_dim, 1);
  // (A short key range gets a short tile: the tile's loads, zero fill and weighted sum are loops
  // that a one-row block's single warp runs in series.)
  int64_t tile_keys = 32;
  while (tile_keys > 1 && tile_keys / 2 >= a.kv_len) tile_keys /= 2;
  while (tile_keys > 1 &&
         4 * (warps * d_padded + tile_keys * (k_stride + dv_padded)) > kSharedBudget) {
    tile_keys /= 2;
  }
  if (4 * (warps * d_padded + tile_keys * (k_stride + dv_padded)) > kSharedBudget) {
    unsupported(node, g, "head sizes too large for the shared-memory tiles (" + a.shapes + ")");
  }
  const int64_t blocks = a.batch * a.q_heads * ((a.q_len + warps - 1) / warps);
  const int64_t y_numel = a.batch * a.q_heads * a.q_len * a.v_dim;
  if (blocks > int64_t{0x7fffffff}) unsupported(node, g, "too many query tiles (" + a.shapes + ")");

  anchor::AnchorWriter w(node, g, name, "attention (flash-style, one warp per query row)");
  write_attention_constants(w, a);
  w.constant("kThreads", 32 * warps);
  w.constant("kWarps", warps);
  w.constant("kTileKeys", tile_keys);
  w.constant("kKStride", k_stride);
  // ONNX scales Q and K by sqrt(scale) each, rounded to float (as the reference).
  w.constant_f32("kRootScale", static_cast<float>(std::sqrt(a.scale)));

  LaunchConfig launch;
  launch.block = static_cast<uint32_t>(32 * warps);
  launch.grid = y_numel == 0 ? 0 : static_cast<uint32_t>(blocks);
  const std::string body = std::string(embedded::attention_common_cuh) + "\n" + embedded::attention_cuh;
  return w.finish(body, "gf_attention", launch);
}

}  // namespace

AttentionNode read_attention_node(const Node& node, const Graph& g) {
  using anchor::unsupported;
  if (node.inputs.size() < 3 || node.outputs.size() != 1) {
    unsupported(node, g, "only Q, K, V, an optional mask and one output are handled");
  }
  for (size_t i = 4; i < node.inputs.size(); ++i) {
    if (node.inputs[i] != kNoValue) unsupported(node, g, "past key/value inputs are not handled");
  }
  AttentionNode a;
  a.dtype = g.value(node.inputs[0]).type.dtype;
  anchor::expect_float_storage(node, g, a.dtype);
  const std::vector<int64_t> q = anchor::static_dims(node, g, node.inputs[0]);
  const std::vector<int64_t> k = anchor::static_dims(node, g, node.inputs[1]);
  const std::vector<int64_t> v = anchor::static_dims(node, g, node.inputs[2]);
  const Attributes& attrs = node.attrs;
  if (attrs.get_int("qk_matmul_output_mode", 0) != 0) {
    unsupported(node, g, "qk_matmul_output_mode other than 0");
  }

  // The dims as the reference reads them (runtime/cpu/reference/attention.cpp).
  const bool packed = q.size() == 3;
  if (q.size() == 4) {
    a.batch = q[0], a.q_heads = q[1], a.kv_heads = k[1], a.q_len = q[2], a.kv_len = k[2];
    a.head_dim = q[3], a.v_dim = v[3];
  } else if (packed) {
    a.q_heads = attrs.get_int("q_num_heads", 1);
    a.kv_heads = attrs.get_int("kv_num_heads", 1);
    if (a.q_heads < 1 || a.kv_heads < 1) unsupported(node, g, "head counts below 1");
    a.batch = q[0], a.q_len = q[1], a.kv_len = k[1];
    a.head_dim = q[2] / a.q_heads, a.v_dim = v[2] / a.kv_heads;
  } else {
    unsupported(node, g, "Q of rank " + std::to_string(q.size()));
  }
  if (a.kv_heads < 1 || a.q_heads % a.kv_heads != 0) {
    unsupported(node, g, "query heads not a multiple of the key/value heads");
  }
  a.shapes = "Q " + shape_string(q) + ", K " + shape_string(k) + ", V " + shape_string(v);
  a.q = head_strides(packed, a.q_heads, a.q_len, a.head_dim);
  a.k = head_strides(packed, a.kv_heads, a.kv_len, a.head_dim);
  a.v = head_strides(packed, a.kv_heads, a.kv_len, a.v_dim);
  a.y = head_strides(packed, a.q_heads, a.q_len, a.v_dim);
  a.scale = attrs.has("scale") ? static_cast<double>(attrs.get_float("scale", 0.0f))
                               : 1.0 / std::sqrt(static_cast<double>(a.head_dim));
  a.softcap = std::max(attrs.get_float("softcap", 0.0f), 0.0f);
  a.causal = attrs.get_int("is_causal", 0) != 0;

  a.has_mask = node.inputs.size() > 3 && node.inputs[3] != kNoValue;
  a.mask_dtype = a.dtype;
  if (a.has_mask) {
    a.mask_dtype = g.value(node.inputs[3]).type.dtype;
    if (a.mask_dtype != DType::kBool && a.mask_dtype != a.dtype) {
      unsupported(node, g, "attn_mask of dtype " + std::string(dtype_name(a.mask_dtype)));
    }
    const std::vector<int64_t> m = anchor::static_dims(node, g, node.inputs[3]);
    if (m.empty() || m.size() > 4) unsupported(node, g, "attn_mask of rank " + std::to_string(m.size()));
    a.mask_columns = m.back();
    // Right-aligned broadcast to [B, Hq, Sq, columns]: size-1 dims repeat (stride 0).
    int64_t stride = 1;
    for (size_t i = m.size(); i-- > 0;) {
      a.mask_strides[4 - m.size() + i] = m[i] == 1 ? 0 : stride;
      stride *= m[i];
    }
  }
  return a;
}

void write_attention_constants(anchor::AnchorWriter& w, const AttentionNode& a) {
  w.element_type(a.dtype);
  w.constant("kB", a.batch);
  w.constant("kHq", a.q_heads);
  w.constant("kGroup", a.q_heads / a.kv_heads);
  w.constant("kSq", a.q_len);
  w.constant("kSkv", a.kv_len);
  w.constant("kD", a.head_dim);
  w.constant("kDv", a.v_dim);
  write_strides(w, "kQ", a.q);
  write_strides(w, "kK", a.k);
  write_strides(w, "kV", a.v);
  write_strides(w, "kY", a.y);
  w.constant_f32("kSoftcap", a.softcap);
  w.flag("kCausal", a.causal);
  w.flag("kHasMask", a.has_mask);
  w.flag("kMaskIsBool", a.mask_dtype == DType::kBool);
  w.typedef_storage(a.mask_dtype, "gf_mask_elem");
  w.constant("kMaskColumns", a.mask_columns);
  w.constant("kMaskStrideB", a.mask_strides[0]);
  w.constant("kMaskStrideH", a.mask_strides[1]);
  w.constant("kMaskStrideS", a.mask_strides[2]);
  w.constant("kMaskStrideJ", a.mask_strides[3]);
}

void check_attention_options(const Node& node, const CudaEmitOptions& options) {
  const auto bad = [&](const std::string& what) {
    throw Error(ErrorCode::kInvalidArgument,
                "node '" + node.name + "' (" + std::string(op_name(node.op)) + "): " + what);
  };
  if (options.decode_cluster_blocks < 0 || options.decode_cluster_blocks > kMaxClusterBlocks) {
    bad("decode_cluster_blocks " + std::to_string(options.decode_cluster_blocks) +
        " is outside 0.." + std::to_string(kMaxClusterBlocks));
  }
  if (options.attention_key_tile != 0 && options.attention_key_tile != 64 &&
      options.attention_key_tile != 128) {
    bad("attention_key_tile " + std::to_string(options.attention_key_tile) +
        " is not 0 (chosen), 64 or 128");
  }
  if (options.attention_row_groups < 0 || options.attention_row_groups > 2) {
    bad("attention_row_groups " + std::to_string(options.attention_row_groups) +
        " is not 0 (chosen), 1 or 2");
  }
}

CudaKernelSource emit_attention_kernel(const Node& node, const Graph& g, const std::string& name,
                                       const CudaEmitOptions& options) {
  return emit_attention_kernel_for(node, g, read_attention_node(node, g), name, options);
}

CudaKernelSource emit_attention_kernel_for(const Node& node, const Graph& g, const AttentionNode& a,
                                           const std::string& name,
                                           const CudaEmitOptions& options) {
  check_attention_options(node, options);
  if (wgmma_attention_fits(a, options))
    return emit_wgmma_attention_kernel(node, g, a, name, options);
  if (mma_attention_fits(a, options)) return emit_mma_attention_kernel(node, g, a, name, options);
  if (decode_attention_fits(a, options))
    return emit_decode_attention_kernel(node, g, a, name, options);
  return emit_row_attention_kernel(node, g, a, name);
}

}  // namespace gf::codegen
