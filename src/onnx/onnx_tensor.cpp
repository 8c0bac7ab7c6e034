#include "onnx/onnx_tensor.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cstring>
#include <filesystem>

namespace gf::onnx_import {

static_assert(std::endian::native == std::endian::little,
              "ONNX raw_data is little-endian; a big-endian host would need byte swaps");

std::optional<DType> dtype_from_onnx(int32_t code) {
  switch (code) {
    case onnx::TensorProto::FLOAT: return DType::kF32;
    case onnx::TensorProto::FLOAT16: return DType::kF16;
    case onnx::TensorProto::BFLOAT16: return DType::kBF16;
    case onnx::TensorProto::DOUBLE: return DType::kF64;
    case onnx::TensorProto::INT64: return DType::kI64;
    case onnx::TensorProto::INT32: return DType::kI32;
    case onnx::TensorProto::INT8: return DType::kI8;
    case onnx::TensorProto::UINT8: return DType::kU8;
    case onnx::TensorProto::BOOL: return DType::kBool;
    default: return std::nullopt;
  }
}

std::string onnx_dtype_name(int32_t code) {
  // Codes past BFLOAT16 came after libonnx 1.12; name them here so messages stay readable.
  static const char* const kNames[] = {
      "UNDEFINED", "FLOAT",      "UINT8",         "INT8",       "UINT16",         "INT16",
      "INT32",     "INT64",      "STRING",        "BOOL",       "FLOAT16",        "DOUBLE",
      "UINT32",    "UINT64",     "COMPLEX64",     "COMPLEX128", "BFLOAT16",       "FLOAT8E4M3FN",
      "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4", "INT4",          "FLOAT4E2M1",
      "FLOAT8E8M0", "UINT2", "INT2"};
  if (code >= 0 && static_cast<size_t>(code) < std::size(kNames)) return kNames[code];
  return "code " + std::to_string(code);
}

DType require_dtype(int32_t code, const std::string& what) {
  if (auto t = dtype_from_onnx(code)) return *t;
  throw Error(ErrorCode::kUnsupported,
              what + " has ONNX dtype " + onnx_dtype_name(code) + ", which graphfuse does not support");
}

namespace {

std::vector<int64_t> checked_dims(const google::protobuf::RepeatedField<int64_t>& in,
                                  const std::string& what) {
  std::vector<int64_t> dims(in.begin(), in.end());
  int64_t numel = 1;
  for (int64_t d : dims) {
    if (d < 0) throw Error(ErrorCode::kParseError, what + " has a negative dimension " + std::to_string(d));
    if (d > kMaxElements || (d != 0 && numel > kMaxElements / d)) {
      throw Error(ErrorCode::kParseError, what + " has an absurd shape (more than 2^40 elements)");
    }
    numel *= d;
  }
  return dims;
}

std::string dims_string(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

// Copies typed repeated fields element by element into the tensor's storage type.
template <class Dst, class Field>
void copy_field(Tensor& out, const Field& field) {
  auto* dst = static_cast<Dst*>(out.raw());
  int64_t i = 0;
  for (auto v : field) dst[i++] = static_cast<Dst>(v);
}

}  // namespace

struct TensorReader::Mapping {
  void* base = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (base != nullptr) munmap(base, size);
  }
};

TensorReader::TensorReader(std::shared_ptr<const void> owner, std::string base_dir)
    : owner_(std::move(owner)), base_dir_(std::move(base_dir)) {}
TensorReader::~TensorReader() = default;

Tensor TensorReader::read(const onnx::TensorProto& t, const std::string& what) {
  const DType dtype = require_dtype(t.data_type(), what);
  std::vector<int64_t> dims = checked_dims(t.dims(), what);
  if (t.has_segment()) throw Error(ErrorCode::kUnsupported, what + " is segmented");
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    return read_external(t, dtype, std::move(dims), what);
  }
  const int64_t numel = checked_numel(dims);
  const size_t nbytes = static_cast<size_t>(numel) * dtype_size(dtype);
  const std::string type = std::string(dtype_name(dtype)) + dims_string(dims);
  if (t.has_raw_data()) {
    const std::string& raw = t.raw_data();
    if (raw.size() != nbytes) {
      throw Error(ErrorCode::kParseError, what + " (" + type + ") holds " + std::to_string(raw.size()) +
                                              " bytes of data, expected " + std::to_string(nbytes));
    }
    void* p = const_cast<char*>(raw.data());
    if (reinterpret_cast<uintptr_t>(p) % dtype_size(dtype) == 0 && dtype != DType::kBool) {
      return Tensor::wrap(dtype, std::move(dims), std::shared_ptr<void>(std::const_pointer_cast<void>(owner_), p), p);
    }
    Tensor out(dtype, std::move(dims));
    if (nbytes) std::memcpy(out.raw(), raw.data(), nbytes);
    if (dtype == DType::kBool) {
      auto* b = static_cast<uint8_t*>(out.raw());
      for (int64_t i = 0; i < numel; ++i) b[i] = b[i] != 0;
    }
    return out;
  }
  // The values' count is checked before the tensor is allocated: the dims alone may ask for
  // any amount of memory.
  const auto [count, field] = [&]() -> std::pair<int64_t, const char*> {
    switch (dtype) {
      case DType::kF32: return {t.float_data_size(), "float_data"};
      case DType::kF64: return {t.double_data_size(), "double_data"};
      case DType::kI64: return {t.int64_data_size(), "int64_data"};
      default: return {t.int32_data_size(), "int32_data"};  // i32, i8, u8, bool, f16/bf16 bits
    }
  }();
  if (count != numel) {
    throw Error(ErrorCode::kParseError, what + " (" + type + ") has " + std::to_string(count) + " values in " +
                                            field + ", expected " + std::to_string(numel));
  }
  Tensor out(dtype, std::move(dims));
  switch (dtype) {
    case DType::kF32: copy_field<float>(out, t.float_data()); break;
    case DType::kF64: copy_field<double>(out, t.double_data()); break;
    case DType::kI64: copy_field<int64_t>(out, t.int64_data()); break;
    case DType::kI32: copy_field<int32_t>(out, t.int32_data()); break;
    case DType::kI8: copy_field<int8_t>(out, t.int32_data()); break;
    case DType::kU8: copy_field<uint8_t>(out, t.int32_data()); break;
    case DType::kBool: {
      auto* dst = static_cast<bool*>(out.raw());
      for (int64_t i = 0; i < numel; ++i) dst[i] = t.int32_data(static_cast<int>(i)) != 0;
      break;
    }
    case DType::kF16:
    case DType::kBF16: {  // 16-bit floats travel as their bit patterns in int32_data
      auto* dst = static_cast<uint16_t*>(out.raw());
      for (int64_t i = 0; i < numel; ++i) dst[i] = static_cast<uint16_t>(t.int32_data(static_cast<int>(i)));
      break;
    }
  }
  return out;
}

std::shared_ptr<TensorReader::Mapping> TensorReader::map_file(const std::string& location,
                                                              const std::string& what) {
  if (base_dir_.empty()) {
    throw Error(ErrorCode::kUnsupported, what + " keeps its data in an external file ('" + location +
                                             "'), but the model was not loaded from a file");
  }
  const std::filesystem::path rel(location);
  if (location.empty() || rel.is_absolute() ||
      std::any_of(rel.begin(), rel.end(), [](const auto& part) { return part == ".."; })) {
    throw Error(ErrorCode::kParseError, what + ": external data location '" + location +
                                            "' must be a relative path inside the model's folder");
  }
  auto it = mappings_.find(location);
  if (it != mappings_.end()) return it->second;
  const std::string path = (std::filesystem::path(base_dir_) / rel).string();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(ErrorCode::kIoError, what + ": cannot open external data file '" + path + "'");
  struct stat st {};
  auto mapping = std::make_shared<Mapping>();
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(ErrorCode::kIoError, what + ": external data '" + path + "' is not a regular file");
  }
  mapping->size = static_cast<size_t>(st.st_size);
  if (mapping->size > 0) {
    void* p = ::mmap(nullptr, mapping->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      ::close(fd);
      throw Error(ErrorCode::kIoError, what + ": cannot map external data file '" + path + "'");
    }
    mapping->base = p;
  }
  ::close(fd);
  mappings_.emplace(location, mapping);
  return mapping;
}

Tensor TensorReader::read_external(const onnx::TensorProto& t, DType dtype, std::vector<int64_t> dims,
                                   const std::string& what) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : t.external_data()) {
    try {
      if (kv.key() == "location") location = kv.value();
      else if (kv.key() == "offset") offset = std::stoll(kv.value());
      else if (kv.key() == "length") length = std::stoll(kv.value());
    } catch (const std::exception&) {
      throw Error(ErrorCode::kParseError, what + ": external data '" + kv.key() + "' is not a number");
    }
  }
  std::shared_ptr<Mapping> m = map_file(location, what);
  const int64_t numel = checked_numel(dims);
  const auto nbytes = static_cast<uint64_t>(numel) * dtype_size(dtype);
  if (offset < 0 || static_cast<uint64_t>(offset) > m->size ||
      (length >= 0 && static_cast<uint64_t>(length) != nbytes) ||
      nbytes > m->size - static_cast<uint64_t>(offset)) {
    throw Error(ErrorCode::kParseError,
                what + " (" + std::string(dtype_name(dtype)) + dims_string(dims) + ", " + std::to_string(nbytes) +
                    " bytes) does not fit external file '" + location + "' (" + std::to_string(m->size) +
                    " bytes) at offset " + std::to_string(offset) +
                    (length >= 0 ? ", length " + std::to_string(length) : ""));
  }
  auto* p = static_cast<char*>(m->base) + offset;
  if (reinterpret_cast<uintptr_t>(p) % dtype_size(dtype) == 0 && dtype != DType::kBool) {
    return Tensor::wrap(dtype, std::move(dims), std::shared_ptr<void>(m, p), p);
  }
  Tensor out(dtype, std::move(dims));
  if (nbytes) std::memcpy(out.raw(), p, nbytes);
  if (dtype == DType::kBool) {
    auto* b = static_cast<uint8_t*>(out.raw());
    for (int64_t i = 0; i < numel; ++i) b[i] = b[i] != 0;
  }
  return out;
}

TensorType tensor_type_from_onnx(const onnx::TypeProto& type, const std::string& what) {
  if (!type.has_tensor_type()) {
    throw Error(ErrorCode::kUnsupported, what + " is not a tensor (sequence, map, optional and sparse "
                                                "values are not supported)");
  }
  const auto& tt = type.tensor_type();
  TensorType out;
  out.dtype = require_dtype(tt.elem_type(), what);
  if (!tt.has_shape()) {
    throw Error(ErrorCode::kUnsupported, what + " has no declared shape (unknown rank)");
  }
  std::vector<Dim> dims;
  for (const auto& d : tt.shape().dim()) {
    if (d.has_dim_value()) {
      if (d.dim_value() < 0) {
        throw Error(ErrorCode::kInvalidGraph, what + " has a negative dimension " + std::to_string(d.dim_value()));
      }
      if (d.dim_value() > kMaxElements) {
        throw Error(ErrorCode::kInvalidGraph, what + " has an absurd dimension " + std::to_string(d.dim_value()));
      }
      dims.emplace_back(d.dim_value());
    } else if (d.has_dim_param() && !d.dim_param().empty()) {
      dims.emplace_back(d.dim_param());
    } else {
      dims.emplace_back();
    }
  }
  out.shape = Shape(std::move(dims));
  if (out.shape.is_static()) {
    int64_t n = 1;
    for (const Dim& d : out.shape) {
      if (d.value() != 0 && n > kMaxElements / d.value()) {
        throw Error(ErrorCode::kInvalidGraph, what + " has an absurd shape " + out.shape.to_string());
      }
      n *= d.value();
    }
  }
  return out;
}

}  // namespace gf::onnx_import
