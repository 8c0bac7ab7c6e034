// Thread-block cluster helpers (sm_90): a block's rank in its cluster, the cluster-wide barrier
// (whole, or in two halves), and a read or write of another block's shared memory (distributed
// shared memory). For kernels whose entry carries __cluster_dims__ (split-KV decode attention,
// the tensor-core skinny GEMM).

// A float at `local` (this block's shared memory) in the shared memory of cluster block `rank`.
static __device__ __forceinline__ float gf_cluster_load(const float* local, uint32_t rank) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(gf_smem_addr(local)), "r"(rank));
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(remote) : "memory");
  return v;
}

// `v` into the float at `local`'s place in the shared memory of cluster block `rank`.
static __device__ __forceinline__ void gf_cluster_store(float* local, uint32_t rank, float v) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
               : "=r"(remote)
               : "r"(gf_smem_addr(local)), "r"(rank));
  asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(remote), "f"(v) : "memory");
}

// The cluster barrier in two halves, for a phase that orders nothing: every thread arrives
// early (at entry) and waits late, by when every block of the cluster has started and its
// shared memory may be written.
static __device__ __forceinline__ void gf_cluster_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}
static __device__ __forceinline__ void gf_cluster_wait() {
  asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
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
