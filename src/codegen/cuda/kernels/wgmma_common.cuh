// Shared-memory operands of wgmma (sm_90a) that the tensor-core GEMM and the wgmma attention
// kernel share (tensor_core_gemm.cuh, attention_wgmma.cuh): tiles of 128-byte rows in the
// 128-byte swizzled layout, which TMA writes and wgmma reads, and their matrix descriptors.
// Addresses are shared-memory window offsets (gf_smem_addr); needs only <cstdint> types.

// Piece c (16 bytes) of row r of a 128-byte-row tile, swizzled as wgmma's 128-byte mode reads
// it (the tile starts 1024-byte aligned).
static __device__ __forceinline__ uint32_t gf_swizzled(int r, int c) {
  return (uint32_t)(r * 128 + ((c ^ (r & 7)) << 4));
}
// A shared-memory matrix descriptor: K-major, 128-byte swizzle, 8-row groups 1024 bytes apart.
static __device__ __forceinline__ uint64_t gf_smem_desc(uint32_t addr) {
  return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)1 << 16) | ((uint64_t)(1024 >> 4) << 32) |
         ((uint64_t)1 << 62);
}
// The same for an MN-major operand (a B whose n index is contiguous, read with wgmma's
// transpose flag): 64-element runs of n are `run_bytes` apart, 8-row groups of k 1024 bytes.
static __device__ __forceinline__ uint64_t gf_smem_desc_mn(uint32_t addr, uint32_t run_bytes) {
  return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)(run_bytes >> 4) << 16) |
         ((uint64_t)(1024 >> 4) << 32) | ((uint64_t)1 << 62);
}
