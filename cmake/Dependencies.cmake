# All third-party lookups live here; targets below only name what they link.
find_package(Threads REQUIRED)
# Generated CPU kernels use OpenMP; the library links its runtime too, so the runtime stays
# loaded while JIT-compiled libraries come and go (unloading it under live worker threads
# crashes the process).
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(fmt REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
find_package(nlohmann_json 3 REQUIRED)

# OpenBLAS: the OpenMP build where there is one (Debian's libopenblas-openmp-dev), so BLAS and
# the generated kernels share one thread pool instead of two pools spinning against each other
# (measured: a 2-core run took 2.8x longer with the pthread build). Else the default build.
find_path(GF_CBLAS_INCLUDE_DIR cblas.h
          PATHS /usr/include/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp NO_DEFAULT_PATH)
find_library(GF_OPENBLAS_LIBRARY NAMES openblas
             PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp NO_DEFAULT_PATH)
find_path(GF_CBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas openblas-pthread)
find_library(GF_OPENBLAS_LIBRARY NAMES openblas)
if(NOT GF_CBLAS_INCLUDE_DIR OR NOT GF_OPENBLAS_LIBRARY)
  message(FATAL_ERROR "OpenBLAS not found: install libopenblas-openmp-dev (scripts/setup.sh does)")
endif()
message(STATUS "graphfuse: OpenBLAS ${GF_OPENBLAS_LIBRARY}")
if(NOT GF_OPENBLAS_LIBRARY MATCHES "openblas-openmp")
  message(WARNING "graphfuse: this OpenBLAS may run its own thread pool beside OpenMP's; the fused "
                  "CPU backend then loses time to thread contention (install libopenblas-openmp-dev)")
endif()
add_library(gf_openblas INTERFACE)
target_include_directories(gf_openblas INTERFACE ${GF_CBLAS_INCLUDE_DIR})
target_link_libraries(gf_openblas INTERFACE ${GF_OPENBLAS_LIBRARY})

set(GF_HAVE_CUDA OFF)
if(GF_WITH_CUDA)
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    set(GF_HAVE_CUDA ON)
    message(STATUS "graphfuse: CUDA toolkit ${CUDAToolkit_VERSION} found; CUDA parts are built")
  else()
    message(STATUS "graphfuse: no CUDA toolkit; building the CPU path only")
  endif()
endif()

# cuDNN 9 (convolution): cudnn.h and libcudnn, in GF_CUDNN_ROOT when set (e.g. a Python
# environment's nvidia/cudnn, which ships only the versioned libcudnn.so.9), else next to the
# CUDA toolkit or in the system paths. Without it Conv uses the direct CUDA kernel.
set(GF_CUDNN_ROOT "" CACHE PATH "Where cuDNN 9 is installed (holds include/cudnn.h and lib/libcudnn.so*)")
set(GF_HAVE_CUDNN OFF)
if(GF_HAVE_CUDA)
  set(gf_cudnn_hints)
  if(GF_CUDNN_ROOT)
    list(APPEND gf_cudnn_hints ${GF_CUDNN_ROOT})
  endif()
  if(DEFINED ENV{CUDNN_ROOT})
    list(APPEND gf_cudnn_hints $ENV{CUDNN_ROOT})
  endif()
  list(APPEND gf_cudnn_hints ${CUDAToolkit_LIBRARY_ROOT} ${CUDAToolkit_TARGET_DIR})
  find_path(GF_CUDNN_INCLUDE_DIR cudnn.h HINTS ${gf_cudnn_hints} ${CUDAToolkit_INCLUDE_DIRS}
            PATH_SUFFIXES include)
  find_library(GF_CUDNN_LIBRARY NAMES cudnn libcudnn.so.9 HINTS ${gf_cudnn_hints}
               PATH_SUFFIXES lib lib64 lib/${CMAKE_LIBRARY_ARCHITECTURE})
  if(GF_CUDNN_INCLUDE_DIR AND GF_CUDNN_LIBRARY AND EXISTS ${GF_CUDNN_INCLUDE_DIR}/cudnn_version.h)
    file(STRINGS ${GF_CUDNN_INCLUDE_DIR}/cudnn_version.h gf_cudnn_major
         REGEX "^#define CUDNN_MAJOR [0-9]+")
    string(REGEX REPLACE ".* ([0-9]+)" "\\1" gf_cudnn_major "${gf_cudnn_major}")
    if(gf_cudnn_major VERSION_GREATER_EQUAL 9)
      set(GF_HAVE_CUDNN ON)
      message(STATUS "graphfuse: cuDNN ${gf_cudnn_major} found (${GF_CUDNN_LIBRARY}); Conv runs "
                     "through cuDNN")
    else()
      message(STATUS "graphfuse: cuDNN at ${GF_CUDNN_INCLUDE_DIR} is version '${gf_cudnn_major}', "
                     "not 9; Conv uses the direct CUDA kernel")
    endif()
  else()
    message(STATUS "graphfuse: cuDNN 9 not found (set GF_CUDNN_ROOT to a folder with "
                   "include/cudnn.h and lib/libcudnn.so*); Conv uses the direct CUDA kernel")
  endif()
endif()

set(GF_HAVE_ONNX OFF)
if(GF_WITH_ONNX)
  find_package(Protobuf QUIET)
  find_path(GF_ONNX_INCLUDE_DIR onnx/onnx_pb.h)
  find_library(GF_ONNX_LIBRARY NAMES onnx)
  find_library(GF_ONNX_PROTO_LIBRARY NAMES onnx_proto)
  if(Protobuf_FOUND AND GF_ONNX_INCLUDE_DIR AND GF_ONNX_LIBRARY AND GF_ONNX_PROTO_LIBRARY)
    set(GF_HAVE_ONNX ON)
    message(STATUS "graphfuse: libonnx found; the ONNX front end is built")
  else()
    message(STATUS "graphfuse: libonnx not found; building without the ONNX front end")
  endif()
endif()

if(GF_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
