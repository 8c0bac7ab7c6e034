// The CUDA target and prelude.
#include "codegen/cuda/cuda_target.h"

namespace gf::codegen {

namespace {

// NVRTC has no <cstdint>. Limits spelled as <cstdint> does (INT64_MIN must not be a literal).
constexpr const char* kIntegerTypes = R"(typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
#define INT8_MIN (-128)
#define INT8_MAX 127
#define UINT8_MAX 255
#define INT32_MIN (-2147483647 - 1)
#define INT32_MAX 2147483647
#define INT64_MIN (-9223372036854775807LL - 1)
#define INT64_MAX 9223372036854775807LL
)";

// A warp's butterfly step: every lane takes part, so every lane ends with the warp's value.
// Types narrower than int travel as int and come back as T (keeps overloads unambiguous).
// Then the 32-bit shared-window address of a shared-memory pointer, as ldmatrix, cp.async and
// mapa take it.
constexpr const char* kWarpHelpers = R"(
template <class T> static __device__ __forceinline__ T gf_shfl_xor(T v, int lane_mask) {
  return (T)__shfl_xor_sync(0xffffffffu, v, lane_mask);
}
static __device__ __forceinline__ uint32_t gf_smem_addr(const void* p) {
  uint32_t a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}
)";

// Programmatic dependent launch (sm_90 and later): in a CUDA graph, a kernel behind a
// programmatic edge may start while the kernel before it still runs. It must call
// gf_grid_dependency_sync() before it touches memory that kernel (or any earlier one) writes or
// reads: the call waits until those kernels have finished and their writes are visible, then
// lets the kernels behind this one start early in turn. Only constants (weights) may be read
// before it. Without a programmatic edge both instructions return at once.
constexpr const char* kGridDependencyHelpers = R"(
static __device__ __forceinline__ void gf_grid_dependency_sync() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
// For a kernel that loads constant data before it waits: lets the kernels after it start at once
// (each still waits, in its own gf_grid_dependency_sync, for this one to finish, and so for the
// ones this one waits for), so a chain of such kernels keeps several weight streams in flight.
static __device__ __forceinline__ void gf_launch_dependents_now() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
// 16 bytes of constant data read before gf_grid_dependency_sync(). A plain (coherent) load on
// purpose: ptxas moves read-only loads (__ldg, ld.global.nc) below griddepcontrol.wait, which
// would leave them waiting for the kernel before this one after all; coherent loads stay above.
static __device__ __forceinline__ uint4 gf_load_before_wait(const void* p) {
  uint4 v;
  asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
// Starts moving `bytes` (a multiple of 16, from a 16-byte aligned address) of constant data
// towards L2, so that reading it after gf_grid_dependency_sync() costs less.
static __device__ __forceinline__ void gf_prefetch_l2(const void* p, unsigned int bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" :: "l"(p), "r"(bytes) : "memory");
#endif
}
)";

// Vector accesses: N elements of T as 16-byte pieces (or one smaller piece), so each is one
// 128-bit (or narrower) load or store. `p` must be aligned to the piece size.
constexpr const char* kVectorHelpers = R"(
template <class T, int N> struct alignas(sizeof(T) * N) gf_vec { T v[N]; };
template <class T, int N> static __device__ __forceinline__ void gf_load_vec(T* dst, const T* p) {
  constexpr int kPiece = (int)(16 / sizeof(T)) < N ? (int)(16 / sizeof(T)) : N;
#pragma unroll
  for (int c = 0; c < N / kPiece; ++c) {
    const gf_vec<T, kPiece> x = *reinterpret_cast<const gf_vec<T, kPiece>*>(p + c * kPiece);
#pragma unroll
    for (int j = 0; j < kPiece; ++j) dst[c * kPiece + j] = x.v[j];
  }
}
template <class T, int N> static __device__ __forceinline__ void gf_store_vec(T* p, const T* src) {
  constexpr int kPiece = (int)(16 / sizeof(T)) < N ? (int)(16 / sizeof(T)) : N;
#pragma unroll
  for (int c = 0; c < N / kPiece; ++c) {
    gf_vec<T, kPiece> x;
#pragma unroll
    for (int j = 0; j < kPiece; ++j) x.v[j] = src[c * kPiece + j];
    *reinterpret_cast<gf_vec<T, kPiece>*>(p + c * kPiece) = x;
  }
}
// N floats (N even) stored as 16-bit values, a pair per Pack, where a conversion per value
// would cost twice the conversion throughput.
template <int N, uint32_t (*Pack)(float, float)>
static __device__ __forceinline__ void gf_store_vec_pairs(uint16_t* p, const float* src) {
  uint32_t pairs[N / 2];
#pragma unroll
  for (int i = 0; i < N / 2; ++i) pairs[i] = Pack(src[2 * i], src[2 * i + 1]);
  gf_store_vec<uint32_t, N / 2>(reinterpret_cast<uint32_t*>(p), pairs);
}
)";

// The 16-bit conversions as single instructions (sm_80 and later). Round to nearest even, as
// the reference's; subnormals and overflow to infinity alike. Only a NaN may differ in its
// payload bits (the instruction gives the canonical 0x7fff), and it stays a NaN.
constexpr const char* k16BitConversions = R"(
static __device__ __forceinline__ float gf_f16_to_f32(uint16_t h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
static __device__ __forceinline__ uint16_t gf_f32_to_f16(float f) {
  uint16_t h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
static __device__ __forceinline__ float gf_bf16_to_f32(uint16_t b) { return __uint_as_float((uint32_t)b << 16); }
static __device__ __forceinline__ uint16_t gf_f32_to_bf16(float f) {
  uint16_t b;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b) : "f"(f));
  return b;
}
// Two floats as one 32-bit pair of f16 or bf16 (lo in the lower half), by one instruction.
// "exact": values bf16 represents already, whose upper halves a byte permute pairs.
static __device__ __forceinline__ uint32_t gf_pack_f16(float lo, float hi) {
  uint32_t d;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
  return d;
}
static __device__ __forceinline__ uint32_t gf_pack_bf16(float lo, float hi) {
  uint32_t d;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
  return d;
}
static __device__ __forceinline__ uint32_t gf_pack_bf16_exact(float lo, float hi) {
  return __byte_perm(__float_as_uint(lo), __float_as_uint(hi), 0x7632);
}
// f rounded to bf16, as a float: the pair conversion with zero in the lower half gives that
// float's bit pattern (one instruction, where the round trip is two).
static __device__ __forceinline__ float gf_round_bf16(float f) { return __uint_as_float(gf_pack_bf16(0.0f, f)); }
// N floats (N even) rounded to bf16 / f16 in place, a pair per conversion instruction (the
// conversions' throughput, not memory, bounds a kernel that rounds many values one at a time).
template <int N>
static __device__ __forceinline__ void gf_round_bf16_pairs(float* v) {
#pragma unroll
  for (int i = 0; i < N; i += 2) {
    const uint32_t d = gf_pack_bf16(v[i], v[i + 1]);
    v[i] = __uint_as_float(d << 16);
    v[i + 1] = __uint_as_float(d & 0xffff0000u);
  }
}
template <int N>
static __device__ __forceinline__ void gf_round_f16_pairs(float* v) {
#pragma unroll
  for (int i = 0; i < N; i += 2) {
    const uint32_t d = gf_pack_f16(v[i], v[i + 1]);
    v[i] = gf_f16_to_f32((uint16_t)(d & 0xffffu));
    v[i + 1] = gf_f16_to_f32((uint16_t)(d >> 16));
  }
}
)";

}  // namespace

Target cuda_target() {
  Target t;
  t.name = "cuda";
  t.inline_kw = "static __device__ __forceinline__";
  t.math_prefix = "";
  t.f32_suffix = "f";
  t.f64_suffix = "";
  // The classification functions are overloaded for float and double in CUDA; no isnanf.
  for (const char* name : {"isnan", "isinf", "isfinite"}) t.f32_math_overrides[name] = name;
  t.float_as_bits = "__float_as_uint";
  t.bits_as_float = "__uint_as_float";
  t.define_bit_casts = false;
  t.define_16bit_helpers = false;  // k16BitConversions
  t.round_to_bf16 = "gf_round_bf16";
  // The bits of the host's HUGE_VALF / NAN, so constants match the CPU's exactly.
  t.f32_inf = "__uint_as_float(0x7f800000u)";
  t.f32_nan = "__uint_as_float(0x7fc00000u)";
  t.f64_inf = "__longlong_as_double(0x7ff0000000000000LL)";
  t.f64_nan = "__longlong_as_double(0x7ff8000000000000LL)";
  t.approx_divide = "gf_div_approx";
  t.approx_sigmoid = "gf_sigmoid_approx";
  t.rounded_16bit_sigmoid = "gf_sigmoid_faithful";
  t.gelu_erf_16bit = "gf_gelu_erf_16bit";
  t.gelu_tanh_16bit = "gf_gelu_tanh_16bit";
  t.gelu_erf_by_reciprocal = true;
  t.f32_reduce_max = "gf_max_nan";
  t.f32_reduce_min = "gf_min_nan";
  return t;
}

// Target::approx_divide and approx_sigmoid: div.full (2 ulps over the whole range) and ex2.approx
// (within 2^-17 relative down to where e^-|x| leaves the f32 range), where the exact division is
// about ten instructions. Subnormal results are kept (no ftz): bf16 has f32's range. Then
// Target::f32_reduce_max and f32_reduce_min.
constexpr const char* kApproxHelpers = R"(
static __device__ __forceinline__ float gf_div_approx(float a, float b) {
  float q;
  asm("div.full.f32 %0, %1, %2;" : "=f"(q) : "f"(a), "f"(b));
  return q;
}
// f32 max and min that return NaN when either argument is one: a single instruction from sm_80
// on, where the compare, NaN test and select of gf_max are three (a max reduction over a row is
// otherwise bound by them). Zeros of both signs may give either; the reductions' order differs
// from the reference's anyway.
static __device__ __forceinline__ float gf_max_nan(float a, float b) {
#if __CUDA_ARCH__ >= 800
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
#else
  return gf_max<float>(a, b);
#endif
}
static __device__ __forceinline__ float gf_min_nan(float a, float b) {
#if __CUDA_ARCH__ >= 800
  float r;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
#else
  return gf_min<float>(a, b);
#endif
}
static __device__ __forceinline__ float gf_sigmoid_approx(float x) {
  float e;
  asm("ex2.approx.f32 %0, %1;" : "=f"(e) : "f"(-fabsf(x) * 1.44269504088896341f));
  return gf_div_approx(x >= 0.0f ? 1.0f : e, 1.0f + e);
}
// Target::rounded_16bit_sigmoid: exp as gf_sigmoid takes it, then the quotient as the
// approximate reciprocal's product corrected by its residual (one FMA step): within one f32 ulp
// of the IEEE quotient, with no branch. The divisor is in [1, 2] and the dividend in [0, 1] (or
// a NaN, which stays one), so the approximation's range limits never apply.
static __device__ __forceinline__ float gf_sigmoid_faithful(float x) {
  const float e = expf(-fabsf(x));
  const float a = x >= 0.0f ? 1.0f : e, b = 1.0f + e;
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(b));
  const float q = a * r;
  return fmaf(r, fmaf(-b, q, a), q);
}
// Target::gelu_erf_16bit and gelu_tanh_16bit: Gelu for results rounded to f16/bf16 right after,
// within about 2^-18 of the exact value relative to it (down to where it leaves f32's range),
// where the float forms through erff and tanhf take two to three times the instructions, and
// lose the relative accuracy of the small negative results to the cancellation in 1 + erf.
// Erf form: x * Phi(x), with the lower tail Phi(-|x|) = erfc(z) / 2 (z = |x| / sqrt 2) as
// t * 2^(P(t) - z^2 log2 e), t = 1 / (1 + z / 2), P of degree 8 fitted to log2(erfc(z) / (2t))
// + z^2 log2 e on z in [0, 9.5] at Chebyshev nodes (tools/fit_gelu_erfc.py), 3.3e-7 in the
// exponent there. At x = +inf the tail is 0 and x * 1 stays inf; at -inf it is NaN, as
// 0.5 x (1 + erf) gives. `to_f16`: the caller rounds the result to f16, which holds nothing
// below 2^-24, so an exponential below 2^-126 may flush to zero: ex2's .ftz form, without the
// instructions that scale such results (bf16 reaches down there).
static __device__ __forceinline__ float gf_ex2_16bit(float y, bool to_f16) {
  float e;
  if (to_f16)
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(y));
  else
    asm("ex2.approx.f32 %0, %1;" : "=f"(e) : "f"(y));
  return e;
}
static __device__ __forceinline__ float gf_gelu_erf_16bit(float x, bool to_f16 = false) {
  float t;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(t) : "f"(fmaf(fabsf(x), 0.353553390593273762f, 1.0f)));
  float p = 0.123535633f;
  p = fmaf(p, t, -0.850160897f);
  p = fmaf(p, t, 2.22977209f);
  p = fmaf(p, t, -2.68656111f);
  p = fmaf(p, t, 1.30906463f);
  p = fmaf(p, t, -0.373865187f);
  p = fmaf(p, t, 0.64199245f);
  p = fmaf(p, t, 1.43144655f);
  p = fmaf(p, t, -2.82522416f);
  const float tail = t * gf_ex2_16bit(fmaf(x * x, -0.721347520444482371f, p), to_f16);
  return x * (x >= 0.0f ? 1.0f - tail : tail);
}
// Tanh form: 0.5 x (1 + tanh(u)) = x sigmoid(2u), u = sqrt(2 / pi) (x + 0.044715 x^3), as
// gf_sigmoid takes it: one exponential of -|2u|, which never overflows (the small results of
// large negative x keep their digits).
static __device__ __forceinline__ float gf_gelu_tanh_16bit(float x, bool to_f16 = false) {
  const float u2 = x * fmaf(x * x, -0.102943239580f, -2.30220819814f);  // -2 u log2 e
  const float e = gf_ex2_16bit(-fabsf(u2), to_f16);
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(1.0f + e));
  return x * (u2 <= 0.0f ? r : e * r);
}
)";

// Packed 16-bit arithmetic (cuda_packed.cpp): two f16 or bf16 values in one 32-bit register (the
// lower half first), one instruction per pair. add, sub and mul round once, as the float op
// followed by a rounding does on the operands the emitter allows them; Relu zeroes the halves
// that compare below zero (a NaN and -0 stay); Abs and Neg are the sign bits' logic ops. The bf16
// forms need sm_90, the f16 forms sm_53.
constexpr const char* kPackedHelpers = R"(
static __device__ __forceinline__ uint32_t gf_pair16(const uint16_t* v, int i) {
  return (uint32_t)v[2 * i] | ((uint32_t)v[2 * i + 1] << 16);
}
static __device__ __forceinline__ float gf_bf16x2_at(const uint32_t* h, int j) {
  return __uint_as_float((j & 1) ? h[j >> 1] & 0xffff0000u : h[j >> 1] << 16);
}
static __device__ __forceinline__ float gf_f16x2_at(const uint32_t* h, int j) {
  return gf_f16_to_f32((uint16_t)(h[j >> 1] >> (16 * (j & 1))));
}
#define GF_PACKED_BINARY(name, inst) \
  static __device__ __forceinline__ uint32_t name(uint32_t a, uint32_t b) { \
    uint32_t d; \
    asm(inst " %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b)); \
    return d; \
  }
#define GF_PACKED_RELU(name, type) \
  static __device__ __forceinline__ uint32_t name(uint32_t a) { \
    uint32_t below; \
    asm("set.lt.u32." type " %0, %1, %2;" : "=r"(below) : "r"(a), "r"(0u)); \
    return a & ~below; \
  }
GF_PACKED_BINARY(gf_add_f16x2, "add.rn.f16x2")
GF_PACKED_BINARY(gf_sub_f16x2, "sub.rn.f16x2")
GF_PACKED_BINARY(gf_mul_f16x2, "mul.rn.f16x2")
GF_PACKED_RELU(gf_relu_f16x2, "f16x2")
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
GF_PACKED_BINARY(gf_add_bf16x2, "add.rn.bf16x2")
GF_PACKED_BINARY(gf_sub_bf16x2, "sub.rn.bf16x2")
GF_PACKED_BINARY(gf_mul_bf16x2, "mul.rn.bf16x2")
GF_PACKED_RELU(gf_relu_bf16x2, "bf16x2")
#endif
#undef GF_PACKED_BINARY
#undef GF_PACKED_RELU
)";

std::string cuda_grid_dependency_helpers() { return kGridDependencyHelpers; }

std::string cuda_prelude() {
  return std::string(kIntegerTypes) + k16BitConversions + scalar_prelude(cuda_target()) +
         kWarpHelpers + kGridDependencyHelpers + kVectorHelpers + kApproxHelpers + kPackedHelpers;
}

}  // namespace gf::codegen
