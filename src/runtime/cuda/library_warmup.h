// A library's first calls in a process cost far more than later ones (cuBLASLt loads and sets
// up its kernels on first use: about 0.15 s before the first GEMM of a GPT-2 export on an H200).
// A warm compile, whose plans all come from the cache, would otherwise pay that when it builds
// the program's CUDA graph. LibraryWarmup runs each distinct cuBLASLt GEMM of a program once, on
// a thread of its own and on scratch buffers, while the compile goes on to load kernels and
// upload weights; join() waits before the graph is built. Advisory only: anything that fails here
// is left for the program's own calls to report. Not under a session's device memory limit:
// there its scratch could take the room the program's weights or arena need.
#pragma once

#include <memory>
#include <thread>
#include <vector>

namespace gf::cuda {

class CublasLtGemm;
class SessionDeviceMemory;

class LibraryWarmup {
 public:
  // Starts on `gemms` (owned by the program, not run by anyone else until join()); scratch is
  // charged to `memory`'s budget. Nothing starts for an empty list.
  LibraryWarmup(std::vector<CublasLtGemm*> gemms, std::shared_ptr<SessionDeviceMemory> memory);
  ~LibraryWarmup();  // joins
  LibraryWarmup(const LibraryWarmup&) = delete;
  LibraryWarmup& operator=(const LibraryWarmup&) = delete;

  void join();

 private:
  std::thread thread_;
};

}  // namespace gf::cuda
