// A 64-bit FNV-1a hash for cache keys of generated code (not for security: inputs are ours).
#pragma once

#include <cstdint>
#include <string_view>

namespace gf::codegen {

class Fnv1a64 {
 public:
  Fnv1a64& add(std::string_view bytes) {
    for (unsigned char c : bytes) {
      state_ ^= c;
      state_ *= kPrime;
    }
    return *this;
  }
  // A separator between fields, so ("ab", "c") and ("a", "bc") hash differently.
  Fnv1a64& add_field(std::string_view bytes) {
    add(bytes);
    state_ ^= 0xffu;  // no UTF-8 or ASCII byte is 0xff
    state_ *= kPrime;
    return *this;
  }
  uint64_t value() const { return state_; }

 private:
  static constexpr uint64_t kOffset = 0xcbf29ce484222325ull;
  static constexpr uint64_t kPrime = 0x100000001b3ull;
  uint64_t state_ = kOffset;
};

inline uint64_t fnv1a64(std::string_view bytes) {
  return Fnv1a64().add(bytes).value();
}

}  // namespace gf::codegen
