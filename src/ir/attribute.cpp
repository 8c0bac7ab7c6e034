#include "graphfuse/attribute.h"

#include <cstring>
#include <sstream>
#include <type_traits>

namespace gf {

namespace {

template <class T>
std::string list_to_string(const std::vector<T>& v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
  os << "]";
  return os.str();
}

[[noreturn]] void wrong_kind(const std::string& name, const char* wanted) {
  throw Error(ErrorCode::kInvalidGraph,
              "attribute '" + name + "' is not " + std::string(wanted));
}

}  // namespace

std::string attribute_to_string(const Attribute& a) {
  struct Visitor {
    std::string operator()(int64_t v) const { return std::to_string(v); }
    std::string operator()(float v) const {
      std::ostringstream os;
      os << v;
      return os.str();
    }
    std::string operator()(const std::string& v) const { return "\"" + v + "\""; }
    std::string operator()(const std::vector<int64_t>& v) const { return list_to_string(v); }
    std::string operator()(const std::vector<float>& v) const { return list_to_string(v); }
    std::string operator()(const std::vector<std::string>& v) const { return list_to_string(v); }
    std::string operator()(const Tensor& t) const { return "tensor " + t.type_string(); }
  };
  return std::visit(Visitor{}, a);
}

int64_t Attributes::get_int(const std::string& name, int64_t fallback) const {
  auto it = map_.find(name);
  if (it == map_.end()) return fallback;
  if (auto* v = std::get_if<int64_t>(&it->second)) return *v;
  wrong_kind(name, "an integer");
}

float Attributes::get_float(const std::string& name, float fallback) const {
  auto it = map_.find(name);
  if (it == map_.end()) return fallback;
  if (auto* v = std::get_if<float>(&it->second)) return *v;
  if (auto* v = std::get_if<int64_t>(&it->second)) return static_cast<float>(*v);
  wrong_kind(name, "a float");
}

std::string Attributes::get_string(const std::string& name, const std::string& fallback) const {
  auto it = map_.find(name);
  if (it == map_.end()) return fallback;
  if (auto* v = std::get_if<std::string>(&it->second)) return *v;
  wrong_kind(name, "a string");
}

std::vector<int64_t> Attributes::get_ints(const std::string& name,
                                          const std::vector<int64_t>& fallback) const {
  auto it = map_.find(name);
  if (it == map_.end()) return fallback;
  if (auto* v = std::get_if<std::vector<int64_t>>(&it->second)) return *v;
  if (auto* v = std::get_if<int64_t>(&it->second)) return {*v};
  wrong_kind(name, "a list of integers");
}

std::vector<float> Attributes::get_floats(const std::string& name,
                                          const std::vector<float>& fallback) const {
  auto it = map_.find(name);
  if (it == map_.end()) return fallback;
  if (auto* v = std::get_if<std::vector<float>>(&it->second)) return *v;
  wrong_kind(name, "a list of floats");
}

const Tensor* Attributes::get_tensor(const std::string& name) const {
  auto it = map_.find(name);
  if (it == map_.end()) return nullptr;
  if (auto* v = std::get_if<Tensor>(&it->second)) return v;
  wrong_kind(name, "a tensor");
}

bool Attributes::operator==(const Attributes& o) const {
  if (map_.size() != o.map_.size()) return false;
  for (auto a = map_.begin(), b = o.map_.begin(); a != map_.end(); ++a, ++b) {
    if (a->first != b->first || a->second.index() != b->second.index()) return false;
    const bool same = std::visit(
        [&](const auto& va) {
          using V = std::decay_t<decltype(va)>;
          const V& vb = std::get<V>(b->second);
          if constexpr (std::is_same_v<V, Tensor>) {
            return va.dtype() == vb.dtype() && va.dims() == vb.dims() &&
                   std::memcmp(va.raw(), vb.raw(), va.nbytes()) == 0;
          } else {
            return va == vb;
          }
        },
        a->second);
    if (!same) return false;
  }
  return true;
}

}  // namespace gf
