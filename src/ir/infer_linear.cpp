// Shape inference for the linear/NN op family: MatMul, Gemm and BatchNormalization here; the
// sliding-window ops in infer_linear_window.cpp; Attention in infer_linear_attention.cpp.
#include "ir/infer_linear_family.h"

namespace gf {

int64_t attr_int(const InferContext& ctx, const std::string& name, int64_t fallback) {
  try {
    return ctx.attrs().get_int(name, fallback);
  } catch (const Error& e) {
    ctx.fail(e.what(), e.code());
  }
}

float attr_float(const InferContext& ctx, const std::string& name, float fallback) {
  try {
    return ctx.attrs().get_float(name, fallback);
  } catch (const Error& e) {
    ctx.fail(e.what(), e.code());
  }
}

std::string attr_string(const InferContext& ctx, const std::string& name,
                        const std::string& fallback) {
  try {
    return ctx.attrs().get_string(name, fallback);
  } catch (const Error& e) {
    ctx.fail(e.what(), e.code());
  }
}

std::vector<int64_t> attr_ints(const InferContext& ctx, const std::string& name) {
  try {
    return ctx.attrs().get_ints(name);
  } catch (const Error& e) {
    ctx.fail(e.what(), e.code());
  }
}

bool attr_flag(const InferContext& ctx, const std::string& name, bool fallback) {
  const int64_t v = attr_int(ctx, name, fallback ? 1 : 0);
  if (v != 0 && v != 1) {
    ctx.fail("attribute '" + name + "' must be 0 or 1, got " + std::to_string(v),
             ErrorCode::kInvalidGraph);
  }
  return v == 1;
}

namespace {

bool static_mismatch(const Dim& a, const Dim& b) {
  return a.is_static() && b.is_static() && a.value() != b.value();
}

// numpy.matmul: 1-D operands are promoted ([K] -> [1,K] on the left, [K,1] on the right) and the
// added dim removed from the result; the leading (batch) dims broadcast.
std::vector<TensorType> infer_matmul(InferContext& ctx) {
  ctx.expect_dtype(0,
                   {DType::kF32, DType::kF16, DType::kBF16, DType::kF64, DType::kI32, DType::kI64});
  ctx.expect_same_dtype(0, 1);
  const Shape& a = ctx.shape(0);
  const Shape& b = ctx.shape(1);
  if (a.rank() == 0 || b.rank() == 0) ctx.fail("MatMul operands must have rank >= 1");
  const Dim ka = a[a.rank() - 1];
  const Dim kb = b.rank() == 1 ? b[0] : b[b.rank() - 2];
  if (static_mismatch(ka, kb)) {
    ctx.fail("inner dimensions differ: " + a.to_string() + " x " + b.to_string() + " (" +
             ka.to_string() + " vs " + kb.to_string() + ")");
  }
  const auto batch_of = [](const Shape& s) {
    return s.rank() <= 2 ? Shape() : Shape(std::vector<Dim>(s.begin(), s.end() - 2));
  };
  std::vector<Dim> out = ctx.broadcast(batch_of(a), batch_of(b)).dims();
  if (a.rank() >= 2) out.push_back(a[a.rank() - 2]);
  if (b.rank() >= 2) out.push_back(b[b.rank() - 1]);
  return {TensorType{ctx.dtype(0), Shape(std::move(out))}};
}

// Y = alpha * op(A) op(B) + beta * C, with C broadcast one way to [M, N].
std::vector<TensorType> infer_gemm(InferContext& ctx) {
  if (!is_floating(ctx.dtype(0))) {
    ctx.fail("Gemm supports float dtypes only, got " + std::string(dtype_name(ctx.dtype(0))),
             ErrorCode::kUnsupported);
  }
  ctx.expect_same_dtype(0, 1);
  ctx.expect_rank(0, 2);
  ctx.expect_rank(1, 2);
  const bool trans_a = attr_flag(ctx, "transA", false);
  const bool trans_b = attr_flag(ctx, "transB", false);
  attr_float(ctx, "alpha", 1.0f);
  attr_float(ctx, "beta", 1.0f);
  const Shape& a = ctx.shape(0);
  const Shape& b = ctx.shape(1);
  const Dim m = trans_a ? a[1] : a[0];
  const Dim ka = trans_a ? a[0] : a[1];
  const Dim kb = trans_b ? b[1] : b[0];
  const Dim n = trans_b ? b[0] : b[1];
  if (static_mismatch(ka, kb)) {
    ctx.fail("inner dimensions differ: op(A) is [" + m.to_string() + "," + ka.to_string() +
             "], op(B) is [" + kb.to_string() + "," + n.to_string() +
             "] (transA=" + std::to_string(trans_a) + ", transB=" + std::to_string(trans_b) + ")");
  }
  const Shape out{m, n};
  if (ctx.has_input(2)) {
    ctx.expect_same_dtype(0, 2);
    const Shape& c = ctx.shape(2);
    if (c.rank() > 2) ctx.fail("C must have rank <= 2, got " + c.to_string());
    for (size_t i = 0; i < c.rank(); ++i) {
      const Dim& cd = c[i];
      const Dim& od = out[2 - c.rank() + i];
      if (cd.is_static() && cd.value() != 1 && static_mismatch(cd, od)) {
        ctx.fail("C " + c.to_string() + " does not broadcast to the result " + out.to_string());
      }
    }
  }
  return {TensorType{ctx.dtype(0), out}};
}

// Inference form only: Y = (X - mean) / sqrt(var + epsilon) * scale + B over channel dim 1.
std::vector<TensorType> infer_batch_norm(InferContext& ctx) {
  if (attr_flag(ctx, "training_mode", false)) {
    ctx.fail("training_mode=1 (batch statistics) is not supported; only inference form",
             ErrorCode::kUnsupported);
  }
  attr_float(ctx, "epsilon", 1e-5f);
  for (int i = 0; i < 5; ++i) ctx.expect_float(i);
  ctx.expect_same_dtype(1, 2);  // scale, B
  ctx.expect_same_dtype(3, 4);  // input_mean, input_var
  if (ctx.rank(0) < 2) ctx.fail("X must have rank >= 2 ([N, C, ...])");
  const Dim& channels = ctx.shape(0)[1];
  static const char* const kNames[] = {"X", "scale", "B", "input_mean", "input_var"};
  for (int i = 1; i < 5; ++i) {
    ctx.expect_rank(i, 1);
    if (static_mismatch(ctx.shape(i)[0], channels)) {
      ctx.fail(std::string(kNames[i]) + " has " + ctx.shape(i)[0].to_string() + " entries for " +
               channels.to_string() + " channels");
    }
  }
  return {ctx.input(0)};
}

}  // namespace

void register_linear_infer(InferTable& table) {
  table[static_cast<size_t>(Op::kMatMul)] = infer_matmul;
  table[static_cast<size_t>(Op::kGemm)] = infer_gemm;
  table[static_cast<size_t>(Op::kBatchNormalization)] = infer_batch_norm;
  register_window_infer(table);
  register_attention_infer(table);
}

}  // namespace gf
