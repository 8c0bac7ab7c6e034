// libFuzzer target: the CLI's NAME=VALUE and NAME=1x128 parsers on arbitrary strings. An
// accepted binding must print back to text that parses to the same value.
#include <cstdint>
#include <string>

#include "cli_util.h"
#include "fuzz_support.h"

namespace {

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "x" : "") + std::to_string(dims[i]);
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string arg(reinterpret_cast<const char*>(data), size);
  gf::fuzz::expect_only_gf_errors("parse_name_value", [&] {
    const auto [name, value] = gf::cli::parse_name_value(arg, "--input");
    gf::fuzz::check(!name.empty() && name + "=" + value == arg, "parse_name_value lost text");
  });
  gf::fuzz::expect_only_gf_errors("parse_shape_binding", [&] {
    const auto [name, dims] = gf::cli::parse_shape_binding(arg, "--shape");
    for (int64_t d : dims) gf::fuzz::check(d >= 0, "parse_shape_binding gave a negative dim");
    const auto again = gf::cli::parse_shape_binding(name + "=" + dims_text(dims), "--shape");
    gf::fuzz::check(again.first == name && again.second == dims,
                    "shape binding round trip differs");
  });
  return 0;
}
