// Conversion of ONNX tensors and tensor types into graphfuse's.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include <onnx/onnx_pb.h>

#include "graphfuse/shape.h"
#include "graphfuse/tensor.h"

namespace gf::onnx_import {

// Above this many elements a tensor or a declared shape is taken as corrupt, not as a model.
inline constexpr int64_t kMaxElements = int64_t{1} << 40;

// The graphfuse dtype of an ONNX TensorProto::DataType code; nullopt for types graphfuse lacks.
std::optional<DType> dtype_from_onnx(int32_t code);
std::string onnx_dtype_name(int32_t code);  // "FLOAT", "STRING", ... or "code N"
// The same, or kUnsupported naming `what` (a tensor, input or attribute).
DType require_dtype(int32_t code, const std::string& what);

// Reads tensors' data: raw bytes are wrapped without a copy where aligned (the `owner` keeps
// them alive); external files are mapped once per file and shared by the tensors in them.
class TensorReader {
 public:
  // `base_dir`: directory of the model file for external data ("" refuses external data).
  TensorReader(std::shared_ptr<const void> owner, std::string base_dir);
  ~TensorReader();
  TensorReader(const TensorReader&) = delete;
  TensorReader& operator=(const TensorReader&) = delete;

  // `t` must live inside the owner. `what` names the tensor in errors ("initializer 'w'").
  Tensor read(const onnx::TensorProto& t, const std::string& what);

 private:
  struct Mapping;
  std::shared_ptr<Mapping> map_file(const std::string& location, const std::string& what);
  Tensor read_external(const onnx::TensorProto& t, DType dtype, std::vector<int64_t> dims,
                       const std::string& what);

  std::shared_ptr<const void> owner_;
  std::string base_dir_;
  std::map<std::string, std::shared_ptr<Mapping>> mappings_;
};

// A value's declared type; dims with dim_param become symbolic, dims with neither value nor
// param unknown. kUnsupported for non-tensor types or a missing shape, kInvalidGraph for a
// negative or absurd dim.
TensorType tensor_type_from_onnx(const onnx::TypeProto& type, const std::string& what);

}  // namespace gf::onnx_import
