// Thread-block cluster helpers (sm_90): a block's rank in its cluster, the cluster-wide barrier,
// and a read of another block's shared memory (distributed shared memory). For kernels whose
// entry carries __cluster_dims__ (split-KV decode attention, the tensor-core skinny GEMM).

// A float at `local` (this block's shared memory) in the shared memory of cluster block `rank`.
static __device__ __forceinline__ float gf_cluster_load(const float* local, uint32_t rank) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(gf_smem_addr(local)), "r"(rank));
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(remote) : "memory");
  return v;
}

// Every thread of every block of the cluster arrives; writes before it are visible after it.
static __device__ __forceinline__ void gf_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

static __device__ __forceinline__ uint32_t gf_cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
