// Kernels of the control-flow forms of a program in a CUDA graph
// (runtime/cuda/program_control.h). Compiled on their own; includes nothing. The conditional
// setter is a device-runtime builtin that the driver resolves when the module loads.

typedef unsigned long long gf_conditional_handle;
extern "C" __device__ __cudart_builtin__ void cudaGraphSetConditional(gf_conditional_handle handle,
                                                                      unsigned int value);

// One copy into an input's arena slot before the next iteration: from an output's slot (a
// carried value) or from the caller's buffer (`binding` >= 0: its address in the binding table).
struct gf_loop_copy {
  unsigned long long dst;
  unsigned long long src;
  unsigned long long bytes;
  int binding;
  int unused;
};

extern "C" __global__ void gf_loop_start(unsigned int* iterations) { *iterations = 0; }

// After an iteration's steps: the inputs of the next one, then whether there is a next one (the
// program's bool condition output, and fewer than `max_iterations` done).
extern "C" __global__ void gf_loop_next(gf_conditional_handle handle, const gf_loop_copy* copies,
                                        int copy_count, const unsigned long long* table,
                                        const unsigned char* condition, unsigned int* iterations,
                                        unsigned int max_iterations) {
  const unsigned long long first = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  const unsigned long long stride = gridDim.x * (unsigned long long)blockDim.x;
  for (int c = 0; c < copy_count; ++c) {
    const gf_loop_copy k = copies[c];
    const unsigned char* src = reinterpret_cast<const unsigned char*>(
        k.binding >= 0 ? table[k.binding] : k.src);
    unsigned char* dst = reinterpret_cast<unsigned char*>(k.dst);
    for (unsigned long long i = first; i < k.bytes; i += stride) dst[i] = src[i];
  }
  if (first == 0) {
    const unsigned int done = ++*iterations;
    cudaGraphSetConditional(handle, (*condition != 0 && done < max_iterations) ? 1u : 0u);
  }
}

// Before an IF: the caller's bool decides.
extern "C" __global__ void gf_if_set(gf_conditional_handle handle, const unsigned char* condition) {
  cudaGraphSetConditional(handle, *condition != 0 ? 1u : 0u);
}
