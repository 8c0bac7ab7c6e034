#include "runtime/cuda/library_warmup.h"

#include <algorithm>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <system_error>

#include "graphfuse/device.h"
#include "graphfuse/error.h"
#include "runtime/cuda/cublaslt_gemm.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_module.h"
#include "runtime/cuda/session_device_memory.h"

namespace gf::cuda {

namespace {

// A stream synchronised and destroyed on every path (before the scratch its work reads is freed,
// when declared after it).
using OwnedStream = std::unique_ptr<CUstream_st, void (*)(CUstream)>;
OwnedStream scratch_stream(const std::string& what) {
  CUstream stream = nullptr;
  check_cu(cuda_driver().cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING),
           "cuStreamCreate (" + what + ")");
  return OwnedStream(stream, [](CUstream s) {
    cuda_driver().cuStreamSynchronize(s);
    cuda_driver().cuStreamDestroy(s);
  });
}

void run_each_once(const std::vector<CublasLtGemm*>& gemms, SessionDeviceMemory& memory) {
  CudaContext::get().make_current();
  // One scratch set as large as the largest operands; values are whatever the memory holds.
  uint64_t a = 1, b = 1, c = 1, bias = 1;
  std::set<std::string> seen;
  std::vector<CublasLtGemm*> distinct;
  for (CublasLtGemm* g : gemms) {
    const GemmSpec& s = g->spec();
    if (!seen.insert(s.to_string() + (s.shared_b ? " shared" : "") + " " +
                     std::to_string(g->chosen()))
             .second)
      continue;
    distinct.push_back(g);
    const uint64_t es = dtype_size(s.dtype);
    a = std::max<uint64_t>(a, static_cast<uint64_t>(s.batch * s.m * s.k) * es);
    b = std::max<uint64_t>(b, static_cast<uint64_t>((s.shared_b ? 1 : s.batch) * s.k * s.n) * es);
    c = std::max<uint64_t>(c, static_cast<uint64_t>(s.batch * s.m * s.n) * es);
    bias = std::max<uint64_t>(bias, static_cast<uint64_t>(s.n) * es);
  }
  const std::string what = "warming up cuBLASLt";
  const DeviceBuffer da = memory.allocate(a, what), db = memory.allocate(b, what),
                     dc = memory.allocate(c, what), dbias = memory.allocate(bias, what),
                     workspace = memory.allocate(kGemmWorkspaceBytes, what);
  const OwnedStream stream = scratch_stream(what);  // declared after the scratch it reads
  for (CublasLtGemm* g : distinct) {
    g->run(da.address(), db.address(), dbias.address(), dc.address(), workspace.address(),
           stream.get());
  }
}

// cuBLASLt's start-up, paid once here: a 64 x 64 x 64 f16 product, its algorithm from the
// heuristic cache like any other.
void set_up_cublaslt() {
  CudaContext::get().make_current();
  const CublasLtHandle handle;
  GemmSpec spec;
  spec.dtype = DType::kF16;
  spec.m = spec.n = spec.k = 64;
  spec.trans_b = true;  // the products of weights stored [n, k] (weight_layout.h)
  CublasLtGemm gemm(handle, spec, 0);
  const std::string what = "setting up cuBLASLt";
  const uint64_t bytes = static_cast<uint64_t>(spec.m * spec.k) * dtype_size(spec.dtype);
  const DeviceBuffer a(bytes, what), b(bytes, what), c(bytes, what);
  const OwnedStream stream = scratch_stream(what);
  gemm.run(a.address(), b.address(), nullptr, c.address(), nullptr, stream.get());
}

}  // namespace

LibraryWarmup::LibraryWarmup(std::vector<CublasLtGemm*> gemms,
                             std::shared_ptr<SessionDeviceMemory> memory) {
  // Under a device memory limit its scratch could take the room the program's own weights or
  // arena need, while both are being made: such sessions pay the first calls in their graph.
  if (gemms.empty() || memory->budget()->limit() != 0) return;
  thread_ = std::thread([gemms = std::move(gemms), memory = std::move(memory)] {
    try {
      run_each_once(gemms, *memory);
    } catch (...) {
      // Advisory: the program's own calls report what fails.
    }
  });
}

LibraryWarmup::~LibraryWarmup() {
  join();
}

void LibraryWarmup::join() {
  if (thread_.joinable()) thread_.join();
}

}  // namespace gf::cuda

namespace gf {

// gf::start_cuda_setup (graphfuse/device.h): the context, then cuBLASLt's set-up (the part every
// first call in a process pays, however small the product) on a thread of its own, started by
// the first call; later calls return at once. The thread multiplies one small f16 product on
// scratch of its own (set_up_cublaslt) and is waited for at exit.
void start_cuda_setup() {
  static std::once_flag once;
  std::call_once(once, [] {
    // The driver's entry points here, so that what the runtime tears down at exit was set up
    // before `setup` below, whose destructor then waits for the thread first. No driver: no
    // thread (the first session says why).
    try {
      cuda_driver();
    } catch (const Error&) {
      return;
    }
    static std::future<void> setup;
    try {
      setup = std::async(std::launch::async, [] {
        try {
          cuda::set_up_cublaslt();
        } catch (...) {
          // Advisory: the programs' own calls report what fails.
        }
      });
    } catch (const std::system_error&) {
      // No thread to spare: the first program's calls pay the set-up.
    }
  });
}

}  // namespace gf
