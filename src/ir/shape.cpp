#include "graphfuse/shape.h"

#include "graphfuse/error.h"

namespace gf {

std::string Dim::to_string() const {
  if (is_static()) return std::to_string(value_);
  return symbol_.empty() ? "?" : symbol_;
}

Shape Shape::from_static(const std::vector<int64_t>& dims) {
  std::vector<Dim> out;
  out.reserve(dims.size());
  for (int64_t d : dims) out.emplace_back(d);
  return Shape(std::move(out));
}

bool Shape::is_static() const {
  for (const Dim& d : dims_)
    if (!d.is_static()) return false;
  return true;
}

std::vector<int64_t> Shape::static_dims() const {
  std::vector<int64_t> out;
  out.reserve(dims_.size());
  for (const Dim& d : dims_) {
    GF_ASSERT(d.is_static(), "static_dims() on a shape with dynamic dims");
    out.push_back(d.value());
  }
  return out;
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (const Dim& d : dims_) {
    if (!d.is_static()) return -1;
    n *= d.value();
  }
  return n;
}

std::string Shape::to_string() const {
  std::string s = "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ",";
    s += dims_[i].to_string();
  }
  return s + "]";
}

std::string TensorType::to_string() const {
  return std::string(dtype_name(dtype)) + shape.to_string();
}

}  // namespace gf
