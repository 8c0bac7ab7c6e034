// Random graphs for property tests: elementwise, broadcast, layout, reduction and MatMul ops
// over small random shapes, with random inputs. The same seed gives the same graph.
#pragma once

#include <random>
#include <string>
#include <vector>

#include "graphfuse/builder.h"
#include "test_util.h"

namespace gf::testing {

inline Tensor random_tensor(std::mt19937& rng, DType dtype, std::vector<int64_t> dims, float lo = -2,
                     float hi = 2) {
  Tensor t(DType::kF32, std::move(dims));
  std::uniform_real_distribution<float> dist(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return testing::to_dtype(t, dtype);
}

// Property test: random graphs of elementwise, broadcast, layout, reduction and MatMul ops.
class RandomGraph {
 public:
  explicit RandomGraph(uint32_t seed) : rng_(seed), b_("random") {}

  Graph make(std::vector<Tensor>& inputs) {
    const int n_inputs = pick(1, 2);
    for (int i = 0; i < n_inputs; ++i) {
      std::vector<int64_t> dims(static_cast<size_t>(pick(1, 3)));
      for (auto& d : dims) d = pick(1, 5);
      values_.push_back(b_.input("in" + std::to_string(i), DType::kF32, Shape::from_static(dims)));
      inputs.push_back(random_tensor(rng_, DType::kF32, dims));
    }
    const int n_ops = pick(3, 12);
    for (int i = 0; i < n_ops; ++i) add_random_op();
    b_.output(values_.back(), "out");
    if (values_.size() > 2) b_.output(values_[static_cast<size_t>(pick(0, static_cast<int>(values_.size()) - 2))], "side");
    return b_.build();
  }

 private:
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  ValueId any() { return values_[static_cast<size_t>(pick(0, static_cast<int>(values_.size()) - 1))]; }
  std::vector<int64_t> dims(ValueId v) { return b_.type(v).shape.static_dims(); }

  void add_random_op() {
    ValueId x = any();
    std::vector<int64_t> d = dims(x);
    const int rank = static_cast<int>(d.size());
    ValueId y = kNoValue;
    // A scalar (a full reduction) only takes elementwise ops.
    switch (rank == 0 ? pick(0, 1) : pick(0, 8)) {
      case 0: {
        const Op ops[] = {Op::kExp, Op::kTanh, Op::kRelu, Op::kNeg, Op::kSigmoid, Op::kAbs, Op::kSin};
        y = b_.unary(ops[pick(0, 6)], x);
        break;
      }
      case 1:
      case 2: {  // binary with a broadcast constant (a suffix of x's dims, some set to 1)
        std::vector<int64_t> cd(d.begin() + pick(0, rank), d.end());
        for (auto& e : cd) if (pick(0, 2) == 0) e = 1;
        ValueId c = b_.constant("", random_tensor(rng_, DType::kF32, cd));
        const Op ops[] = {Op::kAdd, Op::kSub, Op::kMul, Op::kMax, Op::kMin};
        y = pick(0, 1) ? b_.binary(ops[pick(0, 4)], x, c) : b_.binary(ops[pick(0, 4)], c, x);
        break;
      }
      case 3: {  // reduction over random axes
        std::vector<int64_t> axes;
        for (int a = 0; a < rank; ++a) if (pick(0, 1)) axes.push_back(a - (pick(0, 1) ? rank : 0));
        if (axes.empty()) axes.push_back(rank - 1);
        const Op ops[] = {Op::kReduceSum, Op::kReduceMean, Op::kReduceMax, Op::kReduceL2};
        y = b_.reduce(ops[pick(0, 3)], x, axes, pick(0, 1) == 1);
        break;
      }
      case 4: y = b_.softmax(x, pick(0, rank - 1)); break;
      case 5: {  // transpose by a random permutation
        std::vector<int64_t> perm(static_cast<size_t>(rank));
        for (int a = 0; a < rank; ++a) perm[static_cast<size_t>(a)] = a;
        std::shuffle(perm.begin(), perm.end(), rng_);
        y = b_.transpose(x, perm);
        break;
      }
      case 6: {  // reshape to a flat or split shape
        int64_t n = 1;
        for (int64_t e : d) n *= e;
        y = (n % 2 == 0 && pick(0, 1)) ? b_.reshape(x, {2, -1}) : b_.reshape(x, {-1});
        break;
      }
      case 7: {  // MatMul against a constant
        const int64_t k = d.back();
        y = b_.matmul(x, b_.constant("", random_tensor(rng_, DType::kF32, {k, pick(1, 4)})));
        break;
      }
      case 8: {  // combine two values of the same shape, when there are any
        for (ValueId v : values_)
          if (v != x && dims(v) == d) { y = b_.add(x, v); break; }
        if (y == kNoValue) y = b_.mul(x, x);
        break;
      }
    }
    values_.push_back(y);
  }

  std::mt19937 rng_;
  GraphBuilder b_;
  std::vector<ValueId> values_;
};

}  // namespace gf::testing
