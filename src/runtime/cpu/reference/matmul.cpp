// Reference kernels for MatMul and Gemm. Float GEMMs go through OpenBLAS in the compute type
// (the 16-bit floats widened to float, accumulated in float, rounded back once); integer
// MatMul is a plain triple loop with wrap-around (two's complement) accumulation.
#include <algorithm>

#include "runtime/cpu/reference/linear_family.h"
#include "runtime/cpu/reference/ref_util.h"

namespace gf::ref {

namespace {

// c[m,n] = a[m,k] * b[k,n] for integer T, wrapping on overflow like the hardware does (the
// arithmetic is done unsigned so the wrap is defined behaviour).
template <class T>
void int_matmul(int64_t m, int64_t n, int64_t k, const T* a, const T* b, T* c) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      uint64_t acc = 0;
      for (int64_t p = 0; p < k; ++p) {
        acc += static_cast<uint64_t>(static_cast<int64_t>(a[i * k + p])) *
               static_cast<uint64_t>(static_cast<int64_t>(b[p * n + j]));
      }
      c[i * n + j] = static_cast<T>(static_cast<int64_t>(acc));
    }
  }
}

void matmul(const KernelArgs& args) {
  const Tensor& a = args.inputs[0];
  const Tensor& b = args.inputs[1];
  Tensor& y = args.outputs[0];
  // numpy promotion of 1-D operands; the output already has the promoted dims removed.
  std::vector<int64_t> ad = a.dims(), bd = b.dims();
  if (ad.size() == 1) ad.insert(ad.begin(), 1);
  if (bd.size() == 1) bd.push_back(1);
  const int64_t m = ad[ad.size() - 2], k = ad.back(), n = bd.back();
  const std::vector<int64_t> batch_a(ad.begin(), ad.end() - 2), batch_b(bd.begin(), bd.end() - 2);
  std::vector<int64_t> batch(std::max(batch_a.size(), batch_b.size()), 1);
  for (size_t i = 0; i < batch.size(); ++i) {
    const size_t from_end = batch.size() - i;
    const int64_t da = from_end <= batch_a.size() ? batch_a[batch_a.size() - from_end] : 1;
    const int64_t db = from_end <= batch_b.size() ? batch_b[batch_b.size() - from_end] : 1;
    batch[i] = da == 1 ? db : da;
  }
  std::vector<int64_t> stride_a = broadcast_strides(batch_a, batch);
  std::vector<int64_t> stride_b = broadcast_strides(batch_b, batch);
  for (int64_t& s : stride_a) s *= m * k;
  for (int64_t& s : stride_b) s *= k * n;
  const int64_t count = checked_numel(batch);

  visit_dtype(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    MultiIndex it(batch, {stride_a, stride_b});
    if constexpr (kIsFloat<T>) {
      const auto av = to_compute<T>(a);
      const auto bv = to_compute<T>(b);
      std::vector<ComputeType<T>> yv(static_cast<size_t>(y.numel()));
      for (int64_t i = 0; i < count; ++i, it.next()) {
        gemm(args, false, false, m, n, k, av.data() + it.offset(0), bv.data() + it.offset(1),
             yv.data() + i * m * n);
      }
      store<T>(yv, y);
    } else if constexpr (std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>) {
      for (int64_t i = 0; i < count; ++i, it.next()) {
        int_matmul(m, n, k, a.data<T>() + it.offset(0), b.data<T>() + it.offset(1),
                   y.data<T>() + i * m * n);
      }
    } else {
      GF_ASSERT(false, "MatMul dtype passed inference but has no kernel");
    }
  });
}

// Y = alpha * op(A) op(B) + beta * C, evaluated as written (ONNX's reference order), so a NaN
// or Inf in C reaches Y even when beta is 0.
void gemm_op(const KernelArgs& args) {
  const Tensor& a = args.inputs[0];
  const Tensor& b = args.inputs[1];
  Tensor& y = args.outputs[0];
  const bool trans_a = args.attrs().get_int("transA", 0) != 0;
  const bool trans_b = args.attrs().get_int("transB", 0) != 0;
  const double alpha = args.attrs().get_float("alpha", 1.0f);
  const double beta = args.attrs().get_float("beta", 1.0f);
  const int64_t m = y.dims()[0], n = y.dims()[1];
  const int64_t k = trans_a ? a.dims()[0] : a.dims()[1];
  const bool has_c = args.has_input(2);
  const std::vector<int64_t> c_strides =
      has_c ? broadcast_strides(args.inputs[2].dims(), y.dims()) : std::vector<int64_t>{0, 0};

  visit_float_dtype(a.dtype(), "Gemm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const auto av = to_compute<T>(a);
    const auto bv = to_compute<T>(b);
    const std::vector<C> cv = has_c ? to_compute<T>(args.inputs[2]) : std::vector<C>{};
    std::vector<C> yv(static_cast<size_t>(y.numel()));
    gemm(args, trans_a, trans_b, m, n, k, av.data(), bv.data(), yv.data());
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        C& v = yv[static_cast<size_t>(i * n + j)];
        v = v * static_cast<C>(alpha);
        if (has_c)
          v += cv[static_cast<size_t>(i * c_strides[0] + j * c_strides[1])] * static_cast<C>(beta);
      }
    }
    store<T>(yv, y);
  });
}

}  // namespace

void register_matmul_kernels(KernelTable& table) {
  table[static_cast<size_t>(Op::kMatMul)] = matmul;
  table[static_cast<size_t>(Op::kGemm)] = gemm_op;
}

}  // namespace gf::ref
