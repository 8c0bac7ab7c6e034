// Reference kernels for ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1,
// ReduceL2, ReduceSumSquare, ReduceLogSum and ReduceLogSumExp.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "runtime/cpu/reference/reduction_family.h"
#include "runtime/cpu/reference/ref_util.h"

namespace gf::ref {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// How input elements map onto output elements. The output is the input with its reduced dims
// set to 1 (dropping them, as keepdims=0 does, keeps the same element order).
struct ReducePlan {
  std::vector<int64_t> in_dims;
  std::vector<int64_t> out_strides;  // over in_dims: 0 along reduced dims
  int64_t out_numel = 1;
  int64_t count = 1;  // input elements per output element
};

// Which dims a node reduces; inference has validated the axes.
std::vector<bool> reduced_dims(const KernelArgs& a) {
  const int64_t rank = static_cast<int64_t>(a.inputs[0].rank());
  const std::vector<int64_t> axes =
      a.has_input(1) ? a.inputs[1].to_int_vector() : std::vector<int64_t>{};
  const bool noop = a.attrs().get_int("noop_with_empty_axes", 0) != 0;
  std::vector<bool> reduced(static_cast<size_t>(rank), axes.empty() && !noop);
  for (int64_t axis : axes) reduced[static_cast<size_t>(kernel_axis(axis, rank))] = true;
  return reduced;
}

ReducePlan plan_reduce(const std::vector<int64_t>& in_dims, const std::vector<bool>& reduced) {
  ReducePlan p;
  p.in_dims = in_dims;
  std::vector<int64_t> kept = in_dims;
  for (size_t d = 0; d < kept.size(); ++d) {
    if (reduced[d]) {
      p.count *= kept[d];
      kept[d] = 1;
    }
    p.out_numel *= kept[d];
  }
  p.out_strides = broadcast_strides(kept, in_dims);
  return p;
}

// Calls f(input index, output index) for every input element.
template <class F>
void walk(const ReducePlan& p, int64_t in_numel, F f) {
  MultiIndex it(p.in_dims, {p.out_strides});
  for (int64_t i = 0; i < in_numel; ++i, it.next()) f(i, it.offset(0));
}

// One accumulator per output element, started at `init` and folded with step(acc, i).
template <class A, class Step>
std::vector<A> fold(const ReducePlan& p, int64_t in_numel, A init, Step step) {
  std::vector<A> acc(static_cast<size_t>(p.out_numel), init);
  walk(p, in_numel, [&](int64_t i, int64_t j) {
    A& a = acc[static_cast<size_t>(j)];
    a = step(a, i);
  });
  return acc;
}

// log(sum(exp(x))) with the row max taken out first, so exp cannot overflow. A row whose max is
// infinite gives that infinity (-inf for a row of -inf or an empty row), NaN if it holds a NaN.
template <class V>
std::vector<double> log_sum_exp(const ReducePlan& p, int64_t in_numel, V v) {
  const std::vector<double> m =
      fold(p, in_numel, -kInf, [&](double a, int64_t i) { return max_nan(a, v(i)); });
  std::vector<double> s(m.size(), 0.0);
  walk(p, in_numel, [&](int64_t i, int64_t j) {
    s[static_cast<size_t>(j)] += std::exp(v(i) - m[static_cast<size_t>(j)]);
  });
  for (size_t j = 0; j < s.size(); ++j) s[j] = std::isfinite(m[j]) ? m[j] + std::log(s[j]) : m[j];
  return s;
}

template <class T>
void reduce_float(Op op, const ReducePlan& p, const Tensor& x, Tensor& y) {
  const T* px = x.data<T>();
  const int64_t n = x.numel();
  auto v = [&](int64_t i) { return widen<T>(px[i]); };
  auto sum_of = [&](auto f) {
    return fold(p, n, 0.0, [&](double a, int64_t i) { return a + f(v(i)); });
  };
  auto same = [](double e) { return e; };
  auto square = [](double e) { return e * e; };
  std::vector<double> r;
  switch (op) {
    case Op::kReduceSum:
      r = sum_of(same);
      break;
    case Op::kReduceMean:
      r = sum_of(same);
      for (double& e : r) e /= static_cast<double>(p.count);  // 0/0: NaN, like numpy
      break;
    case Op::kReduceProd:
      r = fold(p, n, 1.0, [&](double a, int64_t i) { return a * v(i); });
      break;
    case Op::kReduceMax:
      r = fold(p, n, -kInf, [&](double a, int64_t i) { return max_nan(a, v(i)); });
      break;
    case Op::kReduceMin:
      r = fold(p, n, kInf, [&](double a, int64_t i) { return min_nan(a, v(i)); });
      break;
    case Op::kReduceL1:
      r = sum_of([](double e) { return std::fabs(e); });
      break;
    case Op::kReduceL2:
      r = sum_of(square);
      for (double& e : r) e = std::sqrt(e);
      break;
    case Op::kReduceSumSquare:
      r = sum_of(square);
      break;
    case Op::kReduceLogSum:
      r = sum_of(same);
      for (double& e : r) e = std::log(e);
      break;
    case Op::kReduceLogSumExp:
      r = log_sum_exp(p, n, v);
      break;
    default:
      GF_ASSERT(false, "not a Reduce op");
  }
  T* py = y.data<T>();
  for (size_t j = 0; j < r.size(); ++j) py[j] = narrow<T>(r[j]);
}

// Integers (and bool, for ReduceMax/ReduceMin) in int64 with wrap-around; narrowing back to T
// wraps too, which matches numpy's sums in the input's own dtype.
template <class T>
void reduce_int(const KernelArgs& a, const ReducePlan& p, Tensor& y) {
  const Tensor& x = a.inputs[0];
  const T* px = x.data<T>();
  const int64_t n = x.numel();
  auto v = [&](int64_t i) { return static_cast<int64_t>(px[i]); };
  auto sum_of = [&](auto f) {
    return fold(p, n, int64_t{0}, [&](int64_t acc, int64_t i) { return wrap_add(acc, f(v(i))); });
  };
  auto same = [](int64_t e) { return e; };
  auto square = [](int64_t e) { return wrap_mul(e, e); };
  std::vector<int64_t> r;
  switch (a.node.op) {
    case Op::kReduceSum:
      r = sum_of(same);
      break;
    case Op::kReduceMean:
      if (p.count == 0 && p.out_numel > 0) {
        kernel_fail(a, "the mean of an empty set of integers is undefined");
      }
      r = sum_of(same);
      for (int64_t& e : r) e /= p.count;  // truncates toward zero, as numpy's int mean does
      break;
    case Op::kReduceProd:
      r = fold(p, n, int64_t{1}, [&](int64_t acc, int64_t i) { return wrap_mul(acc, v(i)); });
      break;
    case Op::kReduceMax:
      r = fold(p, n, static_cast<int64_t>(std::numeric_limits<T>::lowest()),
               [&](int64_t acc, int64_t i) { return std::max(acc, v(i)); });
      break;
    case Op::kReduceMin:
      r = fold(p, n, static_cast<int64_t>(std::numeric_limits<T>::max()),
               [&](int64_t acc, int64_t i) { return std::min(acc, v(i)); });
      break;
    case Op::kReduceL1:
      r = sum_of([](int64_t e) { return e < 0 ? wrap_mul(e, -1) : e; });
      break;
    case Op::kReduceL2:
      r = sum_of(square);
      // floor(sqrt) of the sum read as unsigned, which a wrapped-around sum cannot make NaN.
      for (int64_t& e : r) {
        e = static_cast<int64_t>(std::sqrt(static_cast<double>(static_cast<uint64_t>(e))));
      }
      break;
    case Op::kReduceSumSquare:
      r = sum_of(square);
      break;
    default:
      GF_ASSERT(false, "inference admits only float types for this op");
  }
  T* py = y.data<T>();
  for (size_t j = 0; j < r.size(); ++j) py[j] = static_cast<T>(r[j]);
}

void reduce(const KernelArgs& a) {
  const Tensor& x = a.inputs[0];
  const ReducePlan p = plan_reduce(x.dims(), reduced_dims(a));
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kIsFloat<T>) {
      reduce_float<T>(a.node.op, p, x, a.outputs[0]);
    } else {
      reduce_int<T>(a, p, a.outputs[0]);
    }
  });
}

}  // namespace

void register_reduce_kernels(KernelTable& table) {
  for (Op op : {Op::kReduceSum, Op::kReduceMean, Op::kReduceMax, Op::kReduceMin, Op::kReduceProd,
                Op::kReduceL1, Op::kReduceL2, Op::kReduceSumSquare, Op::kReduceLogSum,
                Op::kReduceLogSumExp}) {
    table[static_cast<size_t>(op)] = reduce;
  }
}

}  // namespace gf::ref
