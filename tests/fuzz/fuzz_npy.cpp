// libFuzzer target: the .npy reader on arbitrary bytes. An accepted array must survive a
// write/read round trip bit for bit (dtype, dims and data), so a wrong answer is a finding too.
#include <cstdint>
#include <cstring>
#include <string_view>

#include "fuzz_support.h"
#include "graphfuse/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  gf::fuzz::expect_only_gf_errors("parse_npy", [&] {
    const gf::Tensor t = gf::parse_npy(bytes, "fuzz input");
    const gf::Tensor again = gf::parse_npy(gf::to_npy_bytes(t), "round trip");
    gf::fuzz::check(again.dtype() == t.dtype() && again.dims() == t.dims(),
                    "npy round trip changed the dtype or dims");
    gf::fuzz::check(t.nbytes() == again.nbytes() &&
                        (t.nbytes() == 0 || std::memcmp(t.raw(), again.raw(), t.nbytes()) == 0),
                    "npy round trip changed the data");
  });
  return 0;
}
