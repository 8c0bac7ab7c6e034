#include <random>
#include <string>

#include "graphfuse/builder.h"
#include "graphfuse/models.h"

namespace gf::models {

namespace {

// Weights ~ N(0, std), as GPT-2 initialises them; stored in the requested dtype.
class WeightMaker {
 public:
  WeightMaker(GraphBuilder& b, DType dtype, uint64_t seed) : b_(b), dtype_(dtype), rng_(seed) {}

  ValueId normal(const std::string& name, std::vector<int64_t> dims, float stddev) {
    std::normal_distribution<float> dist(0.0f, stddev);
    return fill(name, std::move(dims), [&] { return dist(rng_); });
  }
  ValueId filled(const std::string& name, std::vector<int64_t> dims, float value) {
    return fill(name, std::move(dims), [&] { return value; });
  }

 private:
  template <class Gen>
  ValueId fill(const std::string& name, std::vector<int64_t> dims, Gen gen) {
    Tensor t(dtype_, std::move(dims));
    for (int64_t i = 0; i < t.numel(); ++i) {
      const float v = gen();
      switch (dtype_) {
        case DType::kF32: t.data<float>()[i] = v; break;
        case DType::kF16: t.data<Half>()[i] = Half(v); break;
        case DType::kBF16: t.data<BFloat16>()[i] = BFloat16(v); break;
        case DType::kF64: t.data<double>()[i] = v; break;
        default:
          throw Error(ErrorCode::kInvalidArgument, "gpt2_stack: dtype must be a float type");
      }
    }
    return b_.constant(name, std::move(t));
  }

  GraphBuilder& b_;
  DType dtype_;
  std::mt19937_64 rng_;
};

}  // namespace

Graph gpt2_stack(const Gpt2Config& c) {
  if (c.layers < 1 || c.d_model < 1 || c.heads < 1 || c.d_model % c.heads != 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "gpt2_stack: need layers >= 1 and d_model divisible by heads");
  }
  const int64_t d = c.d_model, h = c.heads, hd = c.d_model / c.heads;
  GraphBuilder b("gpt2_stack");
  WeightMaker w(b, c.dtype, c.seed);
  ValueId x = b.input("x", c.dtype, Shape{Dim(std::string("batch")), Dim(std::string("seq")), d});
  const ValueId split_sizes = b.constant_ints({d, d, d}, "qkv_split");
  for (int64_t l = 0; l < c.layers; ++l) {
    const std::string p = "h" + std::to_string(l) + ".";
    // Attention block.
    ValueId ln1 = b.layer_norm(x, w.filled(p + "ln_1.weight", {d}, 1.0f),
                               w.filled(p + "ln_1.bias", {d}, 0.0f));
    ValueId qkv = b.add(b.matmul(ln1, w.normal(p + "attn.c_attn.weight", {d, 3 * d}, 0.02f)),
                        w.normal(p + "attn.c_attn.bias", {3 * d}, 0.02f));
    std::vector<ValueId> parts =
        b.op(Op::kSplit, {qkv, split_sizes}, {{"axis", int64_t{-1}}}, 3, p + "attn.split");
    auto heads = [&](ValueId t) {
      return b.transpose(b.reshape(t, {0, 0, h, hd}), {0, 2, 1, 3});  // [B, H, S, hd]
    };
    ValueId attn = b.attention(heads(parts[0]), heads(parts[1]), heads(parts[2]), kNoValue,
                               /*causal=*/true);
    ValueId merged = b.reshape(b.transpose(attn, {0, 2, 1, 3}), {0, 0, d});
    ValueId proj = b.add(b.matmul(merged, w.normal(p + "attn.c_proj.weight", {d, d}, 0.02f)),
                         w.normal(p + "attn.c_proj.bias", {d}, 0.02f));
    x = b.add(x, proj);
    // MLP block.
    const int64_t f = c.mlp_ratio * d;
    ValueId ln2 = b.layer_norm(x, w.filled(p + "ln_2.weight", {d}, 1.0f),
                               w.filled(p + "ln_2.bias", {d}, 0.0f));
    ValueId fc = b.add(b.matmul(ln2, w.normal(p + "mlp.c_fc.weight", {d, f}, 0.02f)),
                       w.normal(p + "mlp.c_fc.bias", {f}, 0.02f));
    ValueId out = b.add(b.matmul(b.gelu(fc, /*tanh_approximation=*/true),
                                 w.normal(p + "mlp.c_proj.weight", {f, d}, 0.02f)),
                        w.normal(p + "mlp.c_proj.bias", {d}, 0.02f));
    x = b.add(x, out);
  }
  ValueId y = b.layer_norm(x, w.filled("ln_f.weight", {d}, 1.0f), w.filled("ln_f.bias", {d}, 0.0f));
  b.output(y, "y");
  return b.build();
}

}  // namespace gf::models
