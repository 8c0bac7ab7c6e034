// Shapes whose dimensions are concrete, symbolic (named, e.g. "batch") or unknown.
//
// Thread safety: value types; const use from several threads at once is safe.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "graphfuse/dtype.h"

namespace gf {

class Dim {
 public:
  Dim() = default;                         // unknown
  Dim(int64_t value) : value_(value) {}    // NOLINT: concrete dims read naturally as numbers
  Dim(int value) : value_(value) {}        // NOLINT
  explicit Dim(std::string symbol) : value_(-1), symbol_(std::move(symbol)) {}
  static Dim unknown() { return Dim(); }

  bool is_static() const { return value_ >= 0; }
  bool is_symbolic() const { return value_ < 0 && !symbol_.empty(); }
  int64_t value() const { return value_; }  // -1 unless static
  const std::string& symbol() const { return symbol_; }
  std::string to_string() const;  // "128", "batch" or "?"

  bool operator==(const Dim& o) const { return value_ == o.value_ && symbol_ == o.symbol_; }

 private:
  int64_t value_ = -1;
  std::string symbol_;
};

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<Dim> dims) : dims_(dims) {}
  explicit Shape(std::vector<Dim> dims) : dims_(std::move(dims)) {}
  static Shape from_static(const std::vector<int64_t>& dims);
  static Shape unknown_of_rank(size_t rank) { return Shape(std::vector<Dim>(rank)); }

  size_t rank() const { return dims_.size(); }
  const Dim& operator[](size_t i) const { return dims_[i]; }
  Dim& operator[](size_t i) { return dims_[i]; }
  const std::vector<Dim>& dims() const { return dims_; }
  auto begin() const { return dims_.begin(); }
  auto end() const { return dims_.end(); }

  bool is_static() const;
  std::vector<int64_t> static_dims() const;  // asserts is_static()
  int64_t numel() const;                     // -1 when not static
  std::string to_string() const;             // "[batch,128,768]"
  bool operator==(const Shape& o) const { return dims_ == o.dims_; }

 private:
  std::vector<Dim> dims_;
};

// The type of a value in a graph: element type and (possibly symbolic) shape.
struct TensorType {
  DType dtype = DType::kF32;
  Shape shape;
  std::string to_string() const;  // "f32[batch,128]"
  bool operator==(const TensorType& o) const = default;
};

}  // namespace gf
