#include "runtime/cuda/library_warmup.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <set>
#include <string>

#include "runtime/cuda/cublaslt_gemm.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_module.h"
#include "runtime/cuda/session_device_memory.h"

namespace gf::cuda {

namespace {

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
  const CudaDriverApi& cu = cuda_driver();
  CUstream stream = nullptr;
  check_cu(cu.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate (" + what + ")");
  // Synchronised and destroyed on every path, before the scratch above is freed.
  const std::unique_ptr<CUstream_st, void (*)(CUstream)> owned(stream, [](CUstream s) {
    cuda_driver().cuStreamSynchronize(s);
    cuda_driver().cuStreamDestroy(s);
  });
  for (CublasLtGemm* g : distinct) {
    g->run(da.address(), db.address(), dbias.address(), dc.address(), workspace.address(), stream);
  }
}

}  // namespace

LibraryWarmup::LibraryWarmup(std::vector<CublasLtGemm*> gemms,
                             std::shared_ptr<SessionDeviceMemory> memory) {
  if (gemms.empty()) return;
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
