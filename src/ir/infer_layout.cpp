// Shape inference for the layout family: the data-movement ops (Reshape, Transpose, Squeeze,
// Unsqueeze, Flatten, Concat, Split) live here, with the helpers the family shares; indexing ops
// and shape producers are in infer_layout_indexing.cpp and infer_layout_shape_ops.cpp.
#include <map>
#include <numeric>

#include "ir/infer_gather_nd.h"
#include "ir/infer_layout_family.h"

namespace gf {

namespace layout {

void expect_int_vector(const InferContext& ctx, int i, std::initializer_list<DType> allowed,
                       const char* what) {
  ctx.expect_dtype(i, allowed);
  if (ctx.rank(i) != 1) {
    ctx.fail(std::string(what) + " (input " + std::to_string(i) + ") must be 1-D, got " +
             ctx.input(i).to_string());
  }
}

void expect_scalar(const InferContext& ctx, int i, const char* what) {
  const Shape& s = ctx.shape(i);
  const bool one = s.rank() == 0 || (s.rank() == 1 && (!s[0].is_static() || s[0].value() == 1));
  if (!one) {
    ctx.fail(std::string(what) + " (input " + std::to_string(i) + ") must be a scalar, got " +
             ctx.input(i).to_string());
  }
}

std::optional<int64_t> vector_length(const InferContext& ctx, int i) {
  const Dim& d = ctx.shape(i)[0];
  if (!d.is_static()) return std::nullopt;
  return d.value();
}

int64_t required_vector_length(const InferContext& ctx, int i, const char* what) {
  std::optional<int64_t> n = vector_length(ctx, i);
  if (!n) {
    ctx.fail(std::string(what) + " (input " + std::to_string(i) +
                 ") has a dynamic length, so the output rank is unknown",
             ErrorCode::kUnsupported);
  }
  return *n;
}

std::vector<int64_t> normalize_axes(const InferContext& ctx, std::vector<int64_t> axes,
                                    int64_t rank, const char* what) {
  const std::vector<int64_t> given = axes;
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t& a : axes) {
    a = ctx.normalize_axis(a, rank, what);
    if (rank == 0) ctx.fail(std::string(what) + " given for a scalar", ErrorCode::kInvalidGraph);
    if (seen[static_cast<size_t>(a)]) {
      ctx.fail(
          std::string(what) + " " + ints_to_string(given) + " repeat axis " + std::to_string(a),
          ErrorCode::kInvalidGraph);
    }
    seen[static_cast<size_t>(a)] = true;
  }
  return axes;
}

std::vector<int64_t> expect_non_negative(const InferContext& ctx, std::vector<int64_t> values,
                                         const char* what) {
  for (int64_t v : values) {
    if (v < 0) ctx.fail(std::string(what) + " " + ints_to_string(values) + " has a negative entry");
  }
  return values;
}

Dim dim_product(std::span<const Dim> dims) {
  int64_t product = 1;
  const Dim* dynamic = nullptr;
  int num_dynamic = 0;
  bool overflow = false;
  for (const Dim& d : dims) {
    if (d.is_static() && d.value() == 0) return Dim(0);
    if (!d.is_static()) {
      dynamic = &d;
      ++num_dynamic;
    } else if (__builtin_mul_overflow(product, d.value(), &product)) {
      overflow = true;
    }
  }
  if (overflow) return Dim::unknown();
  if (num_dynamic == 0) return Dim(product);
  if (num_dynamic == 1 && product == 1) return *dynamic;
  return Dim::unknown();
}

void check_output_size(const InferContext& ctx, const Shape& shape) {
  if (!shape.is_static()) return;
  int64_t n = 1;
  bool too_large = false;
  for (const Dim& d : shape) {
    if (d.value() == 0) return;
    if (__builtin_mul_overflow(n, d.value(), &n) || n > kMaxOutputElements) too_large = true;
  }
  if (too_large) {
    ctx.fail("output shape " + shape.to_string() + " has more than 2^40 elements",
             ErrorCode::kInvalidArgument);
  }
}

std::string ints_to_string(const std::vector<int64_t>& values) {
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i) s += (i ? "," : "") + std::to_string(values[i]);
  return s + "]";
}

}  // namespace layout

namespace {

using layout::dim_product;
using layout::ints_to_string;

// A product of dims split into its static part and its symbols, so that Reshape can cancel
// symbols between input and output ([batch,12,64] -> [0,-1] gives [batch,768]).
struct DimFactors {
  int64_t static_product = 1;
  std::map<std::string, int> symbols;  // symbol -> multiplicity
  bool opaque = false;                 // an unknown dim, or the static part overflowed

  void multiply(const Dim& d) {
    if (d.is_static()) {
      if (__builtin_mul_overflow(static_product, d.value(), &static_product)) opaque = true;
    } else if (d.is_symbolic()) {
      ++symbols[d.symbol()];
    } else {
      opaque = true;
    }
  }
  bool has_zero() const { return !opaque && static_product == 0; }
};

DimFactors factor(const std::vector<Dim>& dims, size_t skip = SIZE_MAX) {
  DimFactors f;
  for (size_t i = 0; i < dims.size(); ++i)
    if (i != skip) f.multiply(dims[i]);
  return f;
}

// The dim Reshape's -1 stands for, from the input dims and the other output dims.
Dim infer_reshape_wildcard(const InferContext& ctx, const Shape& in, const std::vector<Dim>& out,
                           size_t at, const std::vector<int64_t>& target) {
  const DimFactors fin = factor(in.dims());
  const DimFactors fout = factor(out, at);
  if (fin.has_zero()) {
    if (fout.has_zero()) {
      ctx.fail("cannot infer the -1 in shape " + ints_to_string(target) +
               ": the input is empty and another output dim is 0");
    }
    return Dim(0);
  }
  if (fin.opaque || fout.opaque) return Dim::unknown();
  if (fout.static_product == 0) {
    ctx.fail("cannot reshape a non-empty input to shape " + ints_to_string(target));
  }
  // Cancel the output's symbols against the input's.
  std::map<std::string, int> rest = fin.symbols;
  for (const auto& [sym, count] : fout.symbols) {
    auto it = rest.find(sym);
    if (it == rest.end() || it->second < count) return Dim::unknown();
    if ((it->second -= count) == 0) rest.erase(it);
  }
  if (rest.empty()) {
    if (fin.static_product % fout.static_product != 0) {
      ctx.fail("cannot reshape " + in.to_string() + " (" + std::to_string(fin.static_product) +
               " elements) to shape " + ints_to_string(target));
    }
    return Dim(fin.static_product / fout.static_product);
  }
  if (rest.size() == 1 && rest.begin()->second == 1 && fin.static_product == fout.static_product) {
    return Dim(rest.begin()->first);
  }
  return Dim::unknown();
}

std::vector<TensorType> infer_reshape(InferContext& ctx) {
  layout::expect_int_vector(ctx, 1, {DType::kI64}, "shape");
  const bool allowzero = ctx.attrs().get_int("allowzero", 0) != 0;
  const Shape& in = ctx.shape(0);
  const std::optional<std::vector<int64_t>> target = ctx.int_values(1);
  if (!target) {
    const int64_t n = layout::required_vector_length(ctx, 1, "shape");
    return {TensorType{ctx.dtype(0), Shape::unknown_of_rank(static_cast<size_t>(n))}};
  }
  std::vector<Dim> out(target->size());
  std::optional<size_t> wildcard;
  bool has_zero = false;
  for (size_t i = 0; i < target->size(); ++i) {
    const int64_t v = (*target)[i];
    if (v == -1) {
      if (wildcard) ctx.fail("shape " + ints_to_string(*target) + " has more than one -1");
      wildcard = i;
    } else if (v < -1) {
      ctx.fail("shape " + ints_to_string(*target) + " has the invalid entry " + std::to_string(v));
    } else if (v == 0 && !allowzero) {
      if (i >= in.rank()) {
        ctx.fail("shape " + ints_to_string(*target) + " copies input dim " + std::to_string(i) +
                 " (entry 0) but the input has rank " + std::to_string(in.rank()));
      }
      out[i] = in[i];
    } else {
      has_zero |= v == 0;
      out[i] = Dim(v);
    }
  }
  if (wildcard && has_zero) {
    ctx.fail("shape " + ints_to_string(*target) + " has both 0 and -1 with allowzero=1",
             ErrorCode::kInvalidGraph);
  }
  if (wildcard) {
    out[*wildcard] = infer_reshape_wildcard(ctx, in, out, *wildcard, *target);
  } else {
    // Only fully static shapes can be compared: a symbol may be bound to 0 at run time.
    const DimFactors fin = factor(in.dims()), fout = factor(out);
    if (!fin.opaque && !fout.opaque && fin.symbols.empty() && fout.symbols.empty() &&
        fin.static_product != fout.static_product) {
      ctx.fail("cannot reshape " + in.to_string() + " to shape " + ints_to_string(*target) +
               ": the element counts differ");
    }
  }
  return {TensorType{ctx.dtype(0), Shape(std::move(out))}};
}

std::vector<TensorType> infer_transpose(InferContext& ctx) {
  const Shape& in = ctx.shape(0);
  const int64_t r = static_cast<int64_t>(in.rank());
  std::vector<int64_t> perm(static_cast<size_t>(r));
  if (ctx.attrs().has("perm")) {
    perm = ctx.attrs().get_ints("perm");
  } else {
    std::iota(perm.rbegin(), perm.rend(), int64_t{0});
  }
  std::vector<bool> seen(static_cast<size_t>(r), false);
  bool valid = static_cast<int64_t>(perm.size()) == r;
  for (size_t i = 0; valid && i < perm.size(); ++i) {
    valid = perm[i] >= 0 && perm[i] < r && !seen[static_cast<size_t>(perm[i])];
    if (valid) seen[static_cast<size_t>(perm[i])] = true;
  }
  if (!valid) {
    ctx.fail("perm " + ints_to_string(perm) + " is not a permutation of the " + std::to_string(r) +
                 " axes",
             ErrorCode::kInvalidGraph);
  }
  std::vector<Dim> out;
  for (int64_t p : perm) out.push_back(in[static_cast<size_t>(p)]);
  return {TensorType{ctx.dtype(0), Shape(std::move(out))}};
}

std::vector<TensorType> infer_squeeze(InferContext& ctx) {
  const Shape& in = ctx.shape(0);
  const int64_t r = static_cast<int64_t>(in.rank());
  std::vector<bool> drop(static_cast<size_t>(r), false);
  if (ctx.has_input(1)) {
    layout::expect_int_vector(ctx, 1, {DType::kI64}, "axes");
    const std::optional<std::vector<int64_t>> axes = ctx.int_values(1);
    if (!axes) {
      const int64_t n = layout::required_vector_length(ctx, 1, "axes");
      if (n > r)
        ctx.fail("cannot squeeze " + std::to_string(n) + " axes", ErrorCode::kInvalidGraph);
      return {TensorType{ctx.dtype(0), Shape::unknown_of_rank(static_cast<size_t>(r - n))}};
    }
    for (int64_t a : layout::normalize_axes(ctx, *axes, r, "axes")) {
      const Dim& d = in[static_cast<size_t>(a)];
      if (d.is_static() && d.value() != 1) {
        ctx.fail("cannot squeeze axis " + std::to_string(a) + " of size " +
                 std::to_string(d.value()));
      }
      drop[static_cast<size_t>(a)] = true;  // a symbolic dim must turn out to be 1
    }
  } else {
    for (int64_t i = 0; i < r; ++i) {
      const Dim& d = in[static_cast<size_t>(i)];
      if (!d.is_static()) {
        ctx.fail("Squeeze without axes needs static dims, but dim " + std::to_string(i) + " is '" +
                     d.to_string() + "'",
                 ErrorCode::kUnsupported);
      }
      drop[static_cast<size_t>(i)] = d.value() == 1;
    }
  }
  std::vector<Dim> out;
  for (int64_t i = 0; i < r; ++i)
    if (!drop[static_cast<size_t>(i)]) out.push_back(in[static_cast<size_t>(i)]);
  return {TensorType{ctx.dtype(0), Shape(std::move(out))}};
}

std::vector<TensorType> infer_unsqueeze(InferContext& ctx) {
  layout::expect_int_vector(ctx, 1, {DType::kI64}, "axes");
  const Shape& in = ctx.shape(0);
  const std::optional<std::vector<int64_t>> axes = ctx.int_values(1);
  const int64_t n =
      axes ? static_cast<int64_t>(axes->size()) : layout::required_vector_length(ctx, 1, "axes");
  const int64_t out_rank = static_cast<int64_t>(in.rank()) + n;
  if (!axes)
    return {TensorType{ctx.dtype(0), Shape::unknown_of_rank(static_cast<size_t>(out_rank))}};
  // Axes refer to the output, whose rank counts the new dims.
  std::vector<bool> is_new(static_cast<size_t>(out_rank), false);
  for (int64_t a : layout::normalize_axes(ctx, *axes, out_rank, "axes")) {
    is_new[static_cast<size_t>(a)] = true;
  }
  std::vector<Dim> out;
  size_t next = 0;
  for (int64_t i = 0; i < out_rank; ++i)
    out.push_back(is_new[static_cast<size_t>(i)] ? Dim(1) : in[next++]);
  return {TensorType{ctx.dtype(0), Shape(std::move(out))}};
}

std::vector<TensorType> infer_flatten(InferContext& ctx) {
  const Shape& in = ctx.shape(0);
  const int64_t r = static_cast<int64_t>(in.rank());
  int64_t axis = ctx.attrs().get_int("axis", 1);
  if (axis < -r || axis > r) {
    ctx.fail("axis " + std::to_string(axis) + " is out of range [-" + std::to_string(r) + ", " +
                 std::to_string(r) + "]",
             ErrorCode::kInvalidGraph);
  }
  if (axis < 0) axis += r;
  const std::span<const Dim> dims(in.dims());
  return {TensorType{ctx.dtype(0), Shape{dim_product(dims.first(static_cast<size_t>(axis))),
                                         dim_product(dims.subspan(static_cast<size_t>(axis)))}}};
}

// Two dims that must be equal: the static one wins; nullopt when both are static and differ.
std::optional<Dim> merge_equal_dims(const Dim& a, const Dim& b) {
  if (a.is_static() && b.is_static())
    return a.value() == b.value() ? std::optional(a) : std::nullopt;
  if (a.is_static()) return a;
  if (b.is_static()) return b;
  return a.is_symbolic() ? a : b;
}

std::vector<TensorType> infer_concat(InferContext& ctx) {
  if (!ctx.attrs().has("axis")) ctx.fail("attribute 'axis' is required", ErrorCode::kInvalidGraph);
  const size_t r = ctx.rank(0);
  if (r == 0) ctx.fail("cannot concatenate scalars");
  const int64_t axis = ctx.normalize_axis(ctx.attrs().get_int("axis", 0), static_cast<int64_t>(r));
  std::vector<Dim> out = ctx.shape(0).dims();
  std::vector<Dim> along{out[static_cast<size_t>(axis)]};
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    ctx.expect_same_dtype(0, i);
    const Shape& s = ctx.shape(i);
    if (s.rank() != r) {
      ctx.fail("input " + std::to_string(i) + " has rank " + std::to_string(s.rank()) +
               ", input 0 has rank " + std::to_string(r));
    }
    for (size_t d = 0; d < r; ++d) {
      if (static_cast<int64_t>(d) == axis) {
        along.push_back(s[d]);
        continue;
      }
      std::optional<Dim> merged = merge_equal_dims(out[d], s[d]);
      if (!merged) {
        ctx.fail("input " + std::to_string(i) + " " + s.to_string() + " differs from " +
                 ctx.shape(0).to_string() + " in dim " + std::to_string(d) +
                 " (only the concat axis " + std::to_string(axis) + " may differ)");
      }
      out[d] = *merged;
    }
  }
  // The concatenated dim: the sum when static; a lone dynamic dim plus empty inputs is itself.
  int64_t sum = 0;
  std::vector<Dim> dynamic;
  for (const Dim& d : along) {
    if (d.is_static())
      sum += d.value();
    else
      dynamic.push_back(d);
  }
  out[static_cast<size_t>(axis)] =
      dynamic.empty() ? Dim(sum) : (dynamic.size() == 1 && sum == 0 ? dynamic[0] : Dim::unknown());
  return {TensorType{ctx.dtype(0), Shape(std::move(out))}};
}

// Sizes of Split's outputs along the axis; unknown dims where the data is not known.
std::vector<Dim> split_sizes(const InferContext& ctx, const Dim& dim) {
  const int n = ctx.num_outputs();
  const bool has_num = ctx.attrs().has("num_outputs");
  if (ctx.has_input(1) && has_num) {
    ctx.fail("give either the 'split' input or the 'num_outputs' attribute, not both",
             ErrorCode::kInvalidGraph);
  }
  if (ctx.has_input(1)) {
    layout::expect_int_vector(ctx, 1, {DType::kI64}, "split");
    const std::optional<std::vector<int64_t>> split = ctx.int_values(1);
    const std::optional<int64_t> len = layout::vector_length(ctx, 1);
    if (len && *len != n) {
      ctx.fail("split has " + std::to_string(*len) + " entries for " + std::to_string(n) +
               " outputs");
    }
    if (!split) return std::vector<Dim>(static_cast<size_t>(n));
    layout::expect_non_negative(ctx, *split, "split");
    int64_t total = 0;
    for (int64_t s : *split) total += s;
    if (dim.is_static() && total != dim.value()) {
      ctx.fail("split " + ints_to_string(*split) + " sums to " + std::to_string(total) +
               ", but the axis has size " + std::to_string(dim.value()));
    }
    return {split->begin(), split->end()};
  }
  if (has_num && ctx.attrs().get_int("num_outputs", 0) != n) {
    ctx.fail("num_outputs is " + std::to_string(ctx.attrs().get_int("num_outputs", 0)) +
                 " but the node has " + std::to_string(n) + " outputs",
             ErrorCode::kInvalidGraph);
  }
  if (n == 1) return {dim};
  if (!dim.is_static()) return std::vector<Dim>(static_cast<size_t>(n));
  const int64_t d = dim.value();
  if (has_num) {
    // Opset 18: chunks of ceil(d / n), the last one smaller.
    const int64_t chunk = (d + n - 1) / n;
    const int64_t last = d - chunk * (n - 1);
    if (last < 0) {
      ctx.fail("cannot split size " + std::to_string(d) + " into " + std::to_string(n) +
               " chunks of " + std::to_string(chunk));
    }
    std::vector<Dim> sizes(static_cast<size_t>(n), Dim(chunk));
    sizes.back() = Dim(last);
    return sizes;
  }
  if (d % n != 0) {
    ctx.fail("cannot split size " + std::to_string(d) + " evenly into " + std::to_string(n) +
             " outputs");
  }
  return std::vector<Dim>(static_cast<size_t>(n), Dim(d / n));
}

std::vector<TensorType> infer_split(InferContext& ctx) {
  const Shape& in = ctx.shape(0);
  if (in.rank() == 0) ctx.fail("cannot split a scalar");
  const size_t axis = static_cast<size_t>(
      ctx.normalize_axis(ctx.attrs().get_int("axis", 0), static_cast<int64_t>(in.rank())));
  std::vector<TensorType> out;
  for (const Dim& size : split_sizes(ctx, in[axis])) {
    Shape s = in;
    s[axis] = size;
    out.push_back(TensorType{ctx.dtype(0), std::move(s)});
  }
  return out;
}

}  // namespace

void register_layout_infer(InferTable& table) {
  table[static_cast<size_t>(Op::kReshape)] = layout::with_node_context<infer_reshape>;
  table[static_cast<size_t>(Op::kTranspose)] = layout::with_node_context<infer_transpose>;
  table[static_cast<size_t>(Op::kSqueeze)] = layout::with_node_context<infer_squeeze>;
  table[static_cast<size_t>(Op::kUnsqueeze)] = layout::with_node_context<infer_unsqueeze>;
  table[static_cast<size_t>(Op::kFlatten)] = layout::with_node_context<infer_flatten>;
  table[static_cast<size_t>(Op::kConcat)] = layout::with_node_context<infer_concat>;
  table[static_cast<size_t>(Op::kSplit)] = layout::with_node_context<infer_split>;
  layout::register_indexing_infer(table);
  layout::register_shape_producer_infer(table);
  layout::register_gather_nd_infer(table);
}

}  // namespace gf
