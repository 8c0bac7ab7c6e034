// Host tensors: dense, row-major, reference-counted storage. Weights read from a file can be
// wrapped without a copy (the owner keeps the bytes alive).
//
// Thread safety: a Tensor is a handle. Copies share the bytes (clone() makes its own), and the
// reference count is atomic, so handles may be copied and destroyed on any threads. Reading the
// same bytes from several threads is safe; writing them while another thread reads or writes
// them is a data race the caller must prevent.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "graphfuse/dtype.h"
#include "graphfuse/error.h"

namespace gf {

class Tensor {
 public:
  Tensor() = default;  // empty: no dtype storage, defined() is false
  // Allocates zero-filled storage.
  Tensor(DType dtype, std::vector<int64_t> dims);
  // Allocates storage left as it comes, for a producer that writes every element before anything
  // reads one (a transpose of a large weight: no zero-fill pass over its bytes first).
  static Tensor unfilled(DType dtype, std::vector<int64_t> dims);

  // Wraps existing bytes without copying; `owner` keeps them alive. The bytes must hold
  // numel * dtype_size bytes and must not be written through this tensor if they are read-only.
  static Tensor wrap(DType dtype, std::vector<int64_t> dims, std::shared_ptr<void> owner,
                     void* data);

  template <class T>
  static Tensor from_vector(std::vector<int64_t> dims, const std::vector<T>& values);
  template <class T>
  static Tensor scalar(T value) {
    return from_vector<T>({}, std::vector<T>{value});
  }

  bool defined() const { return defined_; }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& dims() const { return dims_; }
  size_t rank() const { return dims_.size(); }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }

  void* raw() { return data_; }
  const void* raw() const { return data_; }
  template <class T>
  T* data() {
    check_type(DTypeOf<T>::value);
    return static_cast<T*>(data_);
  }
  template <class T>
  const T* data() const {
    check_type(DTypeOf<T>::value);
    return static_cast<const T*>(data_);
  }
  template <class T>
  std::span<const T> values() const {
    return {data<T>(), static_cast<size_t>(numel_)};
  }

  // Same storage, new dims (numel must match).
  Tensor reshaped(std::vector<int64_t> dims) const;
  // A deep copy with its own storage.
  Tensor clone() const;
  // Reads element i of any numeric dtype as double / int64 (for shape-like inputs and tests).
  double element_as_double(int64_t i) const;
  int64_t element_as_int(int64_t i) const;
  // All elements of an integer tensor as int64 (shape, axes, pads inputs).
  std::vector<int64_t> to_int_vector() const;

  std::string type_string() const;  // "f32[2,3]"
  const std::shared_ptr<void>& storage() const { return owner_; }

 private:
  void check_type(DType requested) const;
  void allocate(bool zero);

  DType dtype_ = DType::kF32;
  std::vector<int64_t> dims_;
  int64_t numel_ = 0;
  bool defined_ = false;
  std::shared_ptr<void> owner_;
  void* data_ = nullptr;
};

// Product of dims; throws kInvalidArgument on negative dims or int64 overflow.
int64_t checked_numel(const std::vector<int64_t>& dims);

template <class T>
Tensor Tensor::from_vector(std::vector<int64_t> dims, const std::vector<T>& values) {
  Tensor t(DTypeOf<T>::value, std::move(dims));
  if (static_cast<int64_t>(values.size()) != t.numel()) {
    throw Error(ErrorCode::kInvalidArgument,
                "Tensor::from_vector: " + std::to_string(values.size()) + " values for " +
                    t.type_string());
  }
  T* out = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return t;
}

}  // namespace gf
