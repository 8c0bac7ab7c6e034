// Compiling many kernels at once, for both JITs: each source on a worker (at most
// hardware_concurrency threads, the caller being one), results in the order of the sources,
// and the first failure rethrown once every compile has finished. `progress` (optional) hears
// of each finished compile.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <thread>
#include <vector>

#include "codegen/common/compile_progress.h"

namespace gf::codegen {

// compile_one(i) returns the result for source i.
template <class Result, class CompileOne>
std::vector<Result> compile_in_parallel(size_t count, CompileOne compile_one,
                                        CompileProgress* progress = nullptr) {
  std::vector<Result> results(count);
  std::vector<std::exception_ptr> errors(count);
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next++) < count;) {
      try {
        results[i] = compile_one(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
      if (progress) progress->done_one();
    }
  };
  const size_t threads = std::min<size_t>(count, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return results;
}

}  // namespace gf::codegen
