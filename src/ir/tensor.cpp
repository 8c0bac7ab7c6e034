#include "graphfuse/tensor.h"

#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#include "ir/dtype_dispatch.h"

namespace gf {

int64_t checked_numel(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) {
      throw Error(ErrorCode::kInvalidArgument, "negative dimension " + std::to_string(d));
    }
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) {
      throw Error(ErrorCode::kInvalidArgument, "tensor element count overflows int64");
    }
    n *= d;
  }
  return n;
}

namespace {
std::string dims_string(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}
}  // namespace

Tensor::Tensor(DType dtype, std::vector<int64_t> dims)
    : dtype_(dtype), dims_(std::move(dims)), numel_(checked_numel(dims_)), defined_(true) {
  allocate(true);
}

Tensor Tensor::unfilled(DType dtype, std::vector<int64_t> dims) {
  Tensor t;
  t.dtype_ = dtype;
  t.dims_ = std::move(dims);
  t.numel_ = checked_numel(t.dims_);
  t.defined_ = true;
  t.allocate(false);
  return t;
}

void Tensor::allocate(bool zero) {
  const size_t bytes = nbytes();
  if (bytes / dtype_size(dtype_) != static_cast<size_t>(numel_)) {
    throw Error(ErrorCode::kOutOfMemory, "tensor " + type_string() + " is too large");
  }
  // 64-byte alignment suits vector loads in generated CPU code.
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
  if (p == nullptr) {
    throw Error(ErrorCode::kOutOfMemory,
                "cannot allocate " + std::to_string(bytes) + " bytes for tensor " + type_string());
  }
  if (zero) std::memset(p, 0, bytes);
  owner_ = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  data_ = p;
}

Tensor Tensor::wrap(DType dtype, std::vector<int64_t> dims, std::shared_ptr<void> owner,
                    void* data) {
  Tensor t;
  t.dtype_ = dtype;
  t.dims_ = std::move(dims);
  t.numel_ = checked_numel(t.dims_);
  t.defined_ = true;
  t.owner_ = std::move(owner);
  t.data_ = data;
  return t;
}

Tensor Tensor::reshaped(std::vector<int64_t> dims) const {
  if (checked_numel(dims) != numel_) {
    throw Error(ErrorCode::kShapeMismatch,
                "cannot reshape " + type_string() + " to " + dims_string(dims));
  }
  Tensor t = *this;
  t.dims_ = std::move(dims);
  return t;
}

Tensor Tensor::clone() const {
  if (!defined_) return Tensor();
  Tensor t(dtype_, dims_);
  if (nbytes()) std::memcpy(t.data_, data_, nbytes());
  return t;
}

void Tensor::check_type(DType requested) const {
  GF_ASSERT(defined_, "access to an undefined tensor");
  if (requested != dtype_) {
    throw Error(ErrorCode::kInvalidArgument, "tensor " + type_string() + " read as " +
                                                 std::string(dtype_name(requested)));
  }
}

double Tensor::element_as_double(int64_t i) const {
  GF_ASSERT(defined_ && i >= 0 && i < numel_);
  return visit_dtype(dtype_, [&](auto tag) -> double {
    using T = typename decltype(tag)::type;
    return static_cast<double>(static_cast<ComputeType<T>>(static_cast<const T*>(data_)[i]));
  });
}

int64_t Tensor::element_as_int(int64_t i) const {
  GF_ASSERT(defined_ && i >= 0 && i < numel_);
  return visit_dtype(dtype_, [&](auto tag) -> int64_t {
    using T = typename decltype(tag)::type;
    return static_cast<int64_t>(static_cast<ComputeType<T>>(static_cast<const T*>(data_)[i]));
  });
}

std::vector<int64_t> Tensor::to_int_vector() const {
  if (!is_integer(dtype_)) {
    throw Error(ErrorCode::kShapeMismatch,
                "expected an integer tensor, got " + type_string());
  }
  std::vector<int64_t> out(static_cast<size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i) out[static_cast<size_t>(i)] = element_as_int(i);
  return out;
}

std::string Tensor::type_string() const {
  if (!defined_) return "<undefined>";
  return std::string(dtype_name(dtype_)) + dims_string(dims_);
}

}  // namespace gf
