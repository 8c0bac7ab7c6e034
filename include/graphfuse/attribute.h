// Node attributes: a small ordered map from name to a typed value (ONNX's attribute kinds).
//
// Thread safety: a value type; const use from several threads at once is safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "graphfuse/tensor.h"

namespace gf {

using Attribute = std::variant<int64_t, float, std::string, std::vector<int64_t>,
                               std::vector<float>, std::vector<std::string>, Tensor>;

std::string attribute_to_string(const Attribute& a);

class Attributes {
 public:
  Attributes() = default;
  Attributes(std::initializer_list<std::pair<const std::string, Attribute>> init) : map_(init) {}

  void set(const std::string& name, Attribute value) { map_[name] = std::move(value); }
  bool has(const std::string& name) const { return map_.count(name) != 0; }
  void erase(const std::string& name) { map_.erase(name); }
  const std::map<std::string, Attribute>& items() const { return map_; }
  bool empty() const { return map_.empty(); }

  // Typed reads. A present attribute of the wrong kind throws kInvalidGraph naming `name`;
  // an integer attribute is accepted where a float is asked for.
  int64_t get_int(const std::string& name, int64_t fallback) const;
  float get_float(const std::string& name, float fallback) const;
  std::string get_string(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> get_ints(const std::string& name,
                                const std::vector<int64_t>& fallback = {}) const;
  std::vector<float> get_floats(const std::string& name,
                                const std::vector<float>& fallback = {}) const;
  const Tensor* get_tensor(const std::string& name) const;  // nullptr when absent

  bool operator==(const Attributes& o) const;

 private:
  std::map<std::string, Attribute> map_;
};

}  // namespace gf
