// Weights transposed on upload (runtime/cuda/weight_upload.h): dst [n, k] = src [k, n]^T, the
// elements moved as raw bits (2 or 4 bytes), so every value, NaN payloads included, arrives as
// the host had it. 32 x 32 tiles through shared memory, so reads and writes are both coalesced;
// blocks of 32 x 8 threads, grid (tiles along n, tiles along k). Includes nothing.

template <class T>
__device__ __forceinline__ void gf_transpose_tile(const T* __restrict__ src, T* __restrict__ dst,
                                                  long long k, long long n) {
  __shared__ T tile[32][33];  // one column of padding: the column reads hit 32 banks
  const long long r0 = static_cast<long long>(blockIdx.y) * 32;
  const long long c0 = static_cast<long long>(blockIdx.x) * 32;
  for (int i = threadIdx.y; i < 32; i += 8) {
    const long long r = r0 + i, c = c0 + threadIdx.x;
    if (r < k && c < n) tile[i][threadIdx.x] = src[r * n + c];
  }
  __syncthreads();
  for (int i = threadIdx.y; i < 32; i += 8) {
    const long long c = c0 + i, r = r0 + threadIdx.x;  // dst row c, column r
    if (c < n && r < k) dst[c * k + r] = tile[threadIdx.x][i];
  }
}

extern "C" __global__ void __launch_bounds__(256)
    gf_transpose_2byte(const unsigned short* src, unsigned short* dst, long long k, long long n) {
  gf_transpose_tile(src, dst, k, n);
}

extern "C" __global__ void __launch_bounds__(256)
    gf_transpose_4byte(const unsigned int* src, unsigned int* dst, long long k, long long n) {
  gf_transpose_tile(src, dst, k, n);
}
