// The cuDNN backend API (cudnn_graph.h) in small owning pieces: a descriptor that is destroyed
// with its owner, attribute setters that name what failed, and the status check. Only for
// builds with cuDNN (GF_HAVE_CUDNN); used by the operation graphs built here (cudnn_sdpa.cpp).
#pragma once

#ifdef GF_HAVE_CUDNN

#include <cudnn.h>

#include <cstdint>
#include <string>
#include <vector>

namespace gf::cuda::cudnn_backend {

// Throws gf::Error naming `call`: kUnsupported for cuDNN's NOT_SUPPORTED family (an operation
// graph or engine it does not take), kDeviceError for the rest.
void check(cudnnStatus_t status, const std::string& call);

class Descriptor {
 public:
  Descriptor() = default;
  explicit Descriptor(cudnnBackendDescriptorType_t type);
  ~Descriptor();
  Descriptor(Descriptor&& other) noexcept : d_(other.d_) { other.d_ = nullptr; }
  Descriptor& operator=(Descriptor&& other) noexcept;
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;

  cudnnBackendDescriptor_t get() const { return d_; }
  explicit operator bool() const { return d_ != nullptr; }

  Descriptor& set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
                  const void* values);
  Descriptor& set_int(cudnnBackendAttributeName_t name, int64_t value);
  Descriptor& set_ints(cudnnBackendAttributeName_t name, const std::vector<int64_t>& values);
  Descriptor& set_bool(cudnnBackendAttributeName_t name, bool value);
  Descriptor& set_float(cudnnBackendAttributeName_t name, float value);
  Descriptor& set_data_type(cudnnBackendAttributeName_t name, cudnnDataType_t value);
  Descriptor& set_desc(cudnnBackendAttributeName_t name, const Descriptor& value);
  Descriptor& set_descs(cudnnBackendAttributeName_t name,
                        const std::vector<cudnnBackendDescriptor_t>& values);
  // Throws as check() does, naming `what`.
  Descriptor& finalize(const std::string& what);

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

}  // namespace gf::cuda::cudnn_backend

#endif  // GF_HAVE_CUDNN
