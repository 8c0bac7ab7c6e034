// NumPy .npy reader and writer (format described in numpy/lib/format.py).
#include "graphfuse/npy.h"

#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

namespace gf {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
// A header longer than this is not one numpy writes; refuse before scanning it.
constexpr size_t kMaxHeaderLen = 1 << 20;

[[noreturn]] void parse_fail(const std::string& what, const std::string& msg) {
  throw Error(ErrorCode::kParseError, what + ": " + msg);
}

struct DescrInfo {
  const char* descr;
  DType dtype;
};
// '|' (not applicable) and '<' (little-endian) are both accepted for one-byte types.
constexpr DescrInfo kDescrs[] = {
    {"f4", DType::kF32}, {"f2", DType::kF16}, {"f8", DType::kF64}, {"i8", DType::kI64},
    {"i4", DType::kI32}, {"i1", DType::kI8},  {"u1", DType::kU8},  {"b1", DType::kBool},
};

// The header is a Python dict literal; this reads the three keys numpy writes.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& what) : text_(text), what_(what) {}

  std::string string_value(const char* key) {
    size_t p = value_pos(key);
    const char quote = at(p);
    if (quote != '\'' && quote != '"') parse_fail(what_, std::string("'") + key + "' is not a string");
    const size_t end = text_.find(quote, p + 1);
    if (end == std::string_view::npos) parse_fail(what_, "unterminated string in the header");
    return std::string(text_.substr(p + 1, end - p - 1));
  }

  bool bool_value(const char* key) {
    size_t p = value_pos(key);
    if (text_.substr(p, 4) == "True") return true;
    if (text_.substr(p, 5) == "False") return false;
    parse_fail(what_, std::string("'") + key + "' is not True or False");
  }

  std::vector<int64_t> tuple_value(const char* key) {
    size_t p = value_pos(key);
    if (at(p) != '(') parse_fail(what_, std::string("'") + key + "' is not a tuple");
    std::vector<int64_t> dims;
    ++p;
    while (true) {
      p = skip_space(p);
      if (at(p) == ')') break;
      if (at(p) < '0' || at(p) > '9') parse_fail(what_, "bad dimension in the shape tuple");
      int64_t d = 0;
      while (at(p) >= '0' && at(p) <= '9') {
        if (d > (int64_t{1} << 50)) parse_fail(what_, "dimension too large in the shape tuple");
        d = d * 10 + (at(p) - '0');
        ++p;
      }
      dims.push_back(d);
      p = skip_space(p);
      if (at(p) == ',') ++p;
      else if (at(p) != ')') parse_fail(what_, "bad shape tuple in the header");
    }
    return dims;
  }

 private:
  char at(size_t p) const { return p < text_.size() ? text_[p] : '\0'; }
  size_t skip_space(size_t p) const {
    while (at(p) == ' ') ++p;
    return p;
  }
  size_t value_pos(const char* key) {
    const std::string quoted = std::string("'") + key + "'";
    size_t p = text_.find(quoted);
    if (p == std::string_view::npos) parse_fail(what_, std::string("the header has no '") + key + "'");
    p = skip_space(p + quoted.size());
    if (at(p) != ':') parse_fail(what_, std::string("no ':' after '") + key + "'");
    return skip_space(p + 1);
  }

  std::string_view text_;
  const std::string& what_;
};

DType dtype_from_descr(const std::string& descr, const std::string& what) {
  if (descr.size() == 3 && (descr[0] == '<' || descr[0] == '|')) {
    for (const DescrInfo& d : kDescrs) {
      if (descr.compare(1, 2, d.descr) == 0) {
        if (descr[0] == '|' && dtype_size(d.dtype) != 1) break;
        return d.dtype;
      }
    }
  }
  if (!descr.empty() && descr[0] == '>') {
    throw Error(ErrorCode::kUnsupported, what + ": big-endian data ('" + descr + "') is not supported");
  }
  throw Error(ErrorCode::kUnsupported,
              what + ": dtype '" + descr + "' is not supported (f4 f2 f8 i8 i4 i1 u1 b1 are)");
}

std::string descr_of(DType t) {
  switch (t) {
    case DType::kF32:
    case DType::kBF16: return "<f4";  // bf16 has no numpy type: widened exactly to f32
    case DType::kF16: return "<f2";
    case DType::kF64: return "<f8";
    case DType::kI64: return "<i8";
    case DType::kI32: return "<i4";
    case DType::kI8: return "|i1";
    case DType::kU8: return "|u1";
    case DType::kBool: return "|b1";
  }
  return "?";
}

}  // namespace

Tensor parse_npy(std::string_view bytes, const std::string& what) {
  if (bytes.size() < kMagicLen + 4 || bytes.substr(0, kMagicLen) != std::string_view(kMagic, kMagicLen)) {
    parse_fail(what, "not a .npy file (bad magic)");
  }
  const auto major = static_cast<uint8_t>(bytes[6]);
  size_t header_len = 0, pos = 0;
  if (major == 1) {
    header_len = static_cast<uint8_t>(bytes[8]) | static_cast<size_t>(static_cast<uint8_t>(bytes[9])) << 8;
    pos = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) parse_fail(what, "truncated header");
    for (int i = 3; i >= 0; --i) header_len = header_len << 8 | static_cast<uint8_t>(bytes[8 + static_cast<size_t>(i)]);
    pos = 12;
  } else {
    parse_fail(what, "unknown format version " + std::to_string(major));
  }
  if (header_len > kMaxHeaderLen || header_len > bytes.size() - pos) parse_fail(what, "truncated header");
  HeaderParser header(bytes.substr(pos, header_len), what);
  const DType dtype = dtype_from_descr(header.string_value("descr"), what);
  if (header.bool_value("fortran_order")) {
    throw Error(ErrorCode::kUnsupported,
                what + ": Fortran-order arrays are not supported; save with np.ascontiguousarray");
  }
  std::vector<int64_t> dims = header.tuple_value("shape");
  const size_t data_pos = pos + header_len;
  int64_t numel = 0;
  try {
    numel = checked_numel(dims);
  } catch (const Error&) {
    parse_fail(what, "the shape's element count overflows");
  }
  const size_t available = bytes.size() - data_pos;
  // Compare in elements first so a huge shape cannot overflow the byte count.
  if (static_cast<uint64_t>(numel) > available / dtype_size(dtype) ||
      static_cast<size_t>(numel) * dtype_size(dtype) != available) {
    parse_fail(what, "the data holds " + std::to_string(available) + " bytes, the header promises " +
                         std::to_string(numel) + " elements of " + std::string(dtype_name(dtype)));
  }
  Tensor t(dtype, std::move(dims));
  if (t.nbytes()) std::memcpy(t.raw(), bytes.data() + data_pos, t.nbytes());
  if (dtype == DType::kBool) {  // a byte other than 0/1 is not a valid bool
    auto* b = static_cast<uint8_t*>(t.raw());
    for (int64_t i = 0; i < numel; ++i) b[i] = b[i] != 0;
  }
  return t;
}

Tensor read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIoError, "cannot open '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_npy(ss.str(), "'" + path + "'");
}

std::string to_npy_bytes(const Tensor& t) {
  if (!t.defined()) throw Error(ErrorCode::kInvalidArgument, "to_npy_bytes: undefined tensor");
  std::string shape = "(";
  for (size_t i = 0; i < t.rank(); ++i) shape += std::to_string(t.dims()[i]) + (t.rank() == 1 || i + 1 < t.rank() ? ", " : "");
  if (t.rank() == 1) shape.resize(shape.size() - 1);  // "(3,)"
  shape += ")";
  std::string header = "{'descr': '" + descr_of(t.dtype()) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Version 1.0 has a 2-byte header length; a longer header (thousands of dims) needs 2.0, as
  // numpy does. The data starts on a 64-byte boundary and the header ends with '\n'.
  const bool v1 = header.size() + 1 + 63 <= 0xffff;  // with the newline and the most padding
  const size_t len_bytes = v1 ? 2 : 4;
  const size_t unpadded = kMagicLen + 2 + len_bytes + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string out(kMagic, kMagicLen);
  out += v1 ? '\x01' : '\x02';
  out += '\x00';
  for (size_t i = 0; i < len_bytes; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  out += header;
  if (t.dtype() == DType::kBF16) {
    const auto* src = t.data<BFloat16>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      const float f = static_cast<float>(src[i]);
      out.append(reinterpret_cast<const char*>(&f), sizeof f);
    }
  } else {
    out.append(static_cast<const char*>(t.raw()), t.nbytes());
  }
  return out;
}

void write_npy(const std::string& path, const Tensor& t) {
  const std::string bytes = to_npy_bytes(t);
  std::ofstream out(path, std::ios::binary);
  if (!out) throw Error(ErrorCode::kIoError, "cannot write '" + path + "'");
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw Error(ErrorCode::kIoError, "writing '" + path + "' failed");
}

}  // namespace gf
