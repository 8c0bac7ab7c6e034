// Tensor-core pieces the attention and skinny GEMM kernels share (attention_mma.cuh,
// attention_decode_mma.cuh, skinny_gemm_mma.cuh): ldmatrix, mma.sync m16n8k16 with f32
// accumulation, the rounding of two floats into one A fragment register, and the exponent.
//
// Needs from the emitter: gf_elem (16-bit storage) and kBf16 (the MMA input format: bf16, else
// f16).

static __device__ __forceinline__ void gf_ldmatrix_x4(uint32_t* r, const gf_elem* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(gf_smem_addr(p)));
}

static __device__ __forceinline__ void gf_ldmatrix_x4_trans(uint32_t* r, const gf_elem* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(gf_smem_addr(p)));
}

// c (16 x 8, f32) += a (16 x 16, row-major fragment) * b (16 x 8, column-major fragment).
static __device__ __forceinline__ void gf_mma(float* c, const uint32_t* a, uint32_t b0, uint32_t b1) {
  if constexpr (kBf16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// Two floats rounded (to nearest even) to the input format, `lo` in the low half.
static __device__ __forceinline__ uint32_t gf_pack2(float lo, float hi) {
  uint32_t r;
  if constexpr (kBf16) {
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  } else {
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  }
  return r;
}

static __device__ __forceinline__ float gf_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
