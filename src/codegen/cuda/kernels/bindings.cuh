// The two kernels at the edges of a program that runs on the caller's device buffers
// (runtime/cuda/program_bindings.h). Compiled after a line defining GF_BINDING_CAPACITY and the
// prelude's gf_grid_dependency_sync() (codegen/cuda/cuda_target.h); includes nothing.
//
// gf_bind_in takes the caller's addresses by value, as its kernel parameter: re-binding a built
// graph is one kernel-node parameter update, whatever the size of the program. It keeps them in
// the program's binding table. An address with bit 63 set (never set in a device address) is
// bound directly: the program's
// kernels read or write that buffer in place, so gf_bind_in points their pointer-table entries
// (the patches) at it and copies nothing. Any other address is copied: gf_bind_in copies the
// input into its arena slot, gf_bind_out copies the output from the arena to the address, and
// the patches point back at the arena. A copy whose source and destination are the same
// address (the defaults: the arena itself) does nothing.

struct gf_binding_copy {
  unsigned long long arena;  // the value's address in the program
  unsigned long long bytes;
  int binding;               // its index in the caller's addresses
  int unused;
};

// One kernel pointer-table entry that holds a bound value (or a view of it).
struct gf_binding_patch {
  unsigned long long arena;   // the entry when the value is copied
  unsigned long long offset;  // from the value's start, when it is bound directly
  int entry;                  // index in the program's kernel tables
  int binding;
};

struct gf_bindings {
  unsigned long long address[GF_BINDING_CAPACITY];
};

#define GF_BOUND_DIRECTLY (1ull << 63)

static __device__ __forceinline__ bool gf_bound_directly(unsigned long long address) {
  return (address & GF_BOUND_DIRECTLY) != 0;
}

// Every thread of the grid takes a share; 16-byte accesses when both ends and the size allow
// (the caller's buffers need no particular alignment).
static __device__ __forceinline__ void gf_copy_bytes(unsigned long long dst, unsigned long long src,
                                                     unsigned long long bytes) {
  const unsigned long long first = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  const unsigned long long stride = gridDim.x * (unsigned long long)blockDim.x;
  if (((dst | src | bytes) & 15ull) == 0) {
    uint4* d = reinterpret_cast<uint4*>(dst);
    const uint4* s = reinterpret_cast<const uint4*>(src);
    for (unsigned long long i = first; i < bytes / 16; i += stride) d[i] = s[i];
    return;
  }
  unsigned char* d = reinterpret_cast<unsigned char*>(dst);
  const unsigned char* s = reinterpret_cast<const unsigned char*>(src);
  for (unsigned long long i = first; i < bytes; i += stride) d[i] = s[i];
}

extern "C" __global__ void gf_bind_in(gf_bindings caller, const gf_binding_copy* copies,
                                      int copy_count, unsigned long long* table,
                                      int binding_count, const gf_binding_patch* patches,
                                      int patch_count, unsigned long long* kernel_tables) {
  gf_grid_dependency_sync();  // may start early behind a programmatic edge
  const int thread = blockIdx.x * blockDim.x + threadIdx.x;
  if (blockIdx.x == 0) {
    for (int i = threadIdx.x; i < binding_count; i += blockDim.x) table[i] = caller.address[i];
  }
  for (int p = thread; p < patch_count; p += gridDim.x * blockDim.x) {
    const gf_binding_patch k = patches[p];
    const unsigned long long a = caller.address[k.binding];
    kernel_tables[k.entry] = gf_bound_directly(a) ? (a & ~GF_BOUND_DIRECTLY) + k.offset : k.arena;
  }
  for (int c = 0; c < copy_count; ++c) {
    const gf_binding_copy k = copies[c];
    const unsigned long long src = caller.address[k.binding];
    if (!gf_bound_directly(src) && src != k.arena) gf_copy_bytes(k.arena, src, k.bytes);
  }
}

extern "C" __global__ void gf_bind_out(const gf_binding_copy* copies, int copy_count,
                                       const unsigned long long* table) {
  // The copy list is the program's own constant: read before the wait, so that after it only
  // the caller's addresses (this run's table) stand between the last kernel and the copies.
  __shared__ gf_binding_copy list[GF_BINDING_CAPACITY];
  __shared__ unsigned long long destination[GF_BINDING_CAPACITY];
  for (int c = threadIdx.x; c < copy_count; c += blockDim.x) list[c] = copies[c];
  gf_grid_dependency_sync();  // may start early behind a programmatic edge
  for (int c = threadIdx.x; c < copy_count; c += blockDim.x) destination[c] = table[list[c].binding];
  __syncthreads();
  for (int c = 0; c < copy_count; ++c) {
    const unsigned long long dst = destination[c];
    if (!gf_bound_directly(dst) && dst != list[c].arena) gf_copy_bytes(dst, list[c].arena, list[c].bytes);
  }
}
