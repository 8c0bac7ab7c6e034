#include "codegen/cuda/binding_kernels.h"

#include "codegen/cuda/cuda_target.h"
#include "codegen/cuda/kernels/bindings_cuh.h"
#include "graphfuse/error.h"

namespace gf::codegen {

size_t binding_capacity(size_t count) {
  if (count > kMaxBindings) {
    throw Error(ErrorCode::kUnsupported, "a program with " + std::to_string(count) +
                                             " inputs and outputs cannot run on caller buffers "
                                             "(at most " + std::to_string(kMaxBindings) + ")");
  }
  size_t capacity = 8;
  while (capacity < count) capacity *= 2;
  return capacity;
}

std::string binding_kernels_source(size_t capacity) {
  return "#define GF_BINDING_CAPACITY " + std::to_string(capacity) + "\n" +
         cuda_grid_dependency_helpers() + embedded::bindings_cuh;
}

}  // namespace gf::codegen
