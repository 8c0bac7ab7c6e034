#ifdef GF_HAVE_CUDNN

#include "runtime/cuda/cudnn_backend.h"

#include "graphfuse/error.h"

namespace gf::cuda::cudnn_backend {

void check(cudnnStatus_t status, const std::string& call) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  const int family = static_cast<int>(status) / 1000 * 1000;
  const ErrorCode code = family == static_cast<int>(CUDNN_STATUS_NOT_SUPPORTED)
                             ? ErrorCode::kUnsupported
                             : ErrorCode::kDeviceError;
  throw Error(code, call + " failed: " + cudnnGetErrorString(status) + " (" +
                        std::to_string(static_cast<int>(status)) + ")");
}

Descriptor::Descriptor(cudnnBackendDescriptorType_t type) {
  check(cudnnBackendCreateDescriptor(type, &d_),
        "cudnnBackendCreateDescriptor (type " + std::to_string(static_cast<int>(type)) + ")");
}

Descriptor::~Descriptor() {
  if (d_) cudnnBackendDestroyDescriptor(d_);
}

Descriptor& Descriptor::operator=(Descriptor&& other) noexcept {
  if (this != &other) {
    if (d_) cudnnBackendDestroyDescriptor(d_);
    d_ = other.d_;
    other.d_ = nullptr;
  }
  return *this;
}

Descriptor& Descriptor::set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                            int64_t count, const void* values) {
  check(cudnnBackendSetAttribute(d_, name, type, count, values),
        "cudnnBackendSetAttribute (attribute " + std::to_string(static_cast<int>(name)) + ")");
  return *this;
}

Descriptor& Descriptor::set_int(cudnnBackendAttributeName_t name, int64_t value) {
  return set(name, CUDNN_TYPE_INT64, 1, &value);
}

Descriptor& Descriptor::set_ints(cudnnBackendAttributeName_t name,
                                 const std::vector<int64_t>& values) {
  return set(name, CUDNN_TYPE_INT64, static_cast<int64_t>(values.size()), values.data());
}

Descriptor& Descriptor::set_bool(cudnnBackendAttributeName_t name, bool value) {
  return set(name, CUDNN_TYPE_BOOLEAN, 1, &value);
}

Descriptor& Descriptor::set_float(cudnnBackendAttributeName_t name, float value) {
  return set(name, CUDNN_TYPE_FLOAT, 1, &value);
}

Descriptor& Descriptor::set_data_type(cudnnBackendAttributeName_t name, cudnnDataType_t value) {
  return set(name, CUDNN_TYPE_DATA_TYPE, 1, &value);
}

Descriptor& Descriptor::set_desc(cudnnBackendAttributeName_t name, const Descriptor& value) {
  cudnnBackendDescriptor_t d = value.get();
  return set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &d);
}

Descriptor& Descriptor::set_descs(cudnnBackendAttributeName_t name,
                                  const std::vector<cudnnBackendDescriptor_t>& values) {
  return set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, static_cast<int64_t>(values.size()),
             values.data());
}

Descriptor& Descriptor::finalize(const std::string& what) {
  check(cudnnBackendFinalize(d_), "cudnnBackendFinalize (" + what + ")");
  return *this;
}

}  // namespace gf::cuda::cudnn_backend

#endif  // GF_HAVE_CUDNN
