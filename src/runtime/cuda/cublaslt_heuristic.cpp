#include "runtime/cuda/cublaslt_heuristic.h"

#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>

#include "runtime/cuda/cublaslt_gemm.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/timed_choices.h"

namespace gf::cuda {

namespace {

constexpr char kKind[] = "cublaslt_heuristic";

struct Memo {
  std::mutex mutex;
  std::map<std::string, std::vector<cublasLtMatmulAlgo_t>> by_key;
};

Memo& memo() {
  // Never destroyed: cuBLASLt's set-up thread (library_warmup.h) may still ask it while the
  // process exits.
  static Memo* m = new Memo();
  return *m;
}

std::vector<cublasLtMatmulAlgo_t> ask_heuristic(const CublasLtHandle& handle,
                                                const CublasLtDescriptors& d,
                                                size_t workspace_bytes, size_t max_candidates) {
  cublasLtMatmulPreference_t pref = nullptr;
  check_cublas(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  std::vector<cublasLtMatmulHeuristicResult_t> results(max_candidates);
  int found = 0;
  const uint64_t ws = workspace_bytes;
  cublasStatus_t st = cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
  if (st == CUBLAS_STATUS_SUCCESS) {
    st = cublasLtMatmulAlgoGetHeuristic(handle.get(), d.desc, d.a, d.b, d.c, d.c, pref,
                                        static_cast<int>(max_candidates), results.data(), &found);
  }
  cublasLtMatmulPreferenceDestroy(pref);
  check_cublas(st, "cublasLtMatmulAlgoGetHeuristic");
  std::vector<cublasLtMatmulAlgo_t> out;
  for (int i = 0; i < found; ++i)
    if (results[i].state == CUBLAS_STATUS_SUCCESS) out.push_back(results[i].algo);
  return out;
}

}  // namespace

std::string cublaslt_device_key() {
  const CudaContext& ctx = CudaContext::get();
  return " on " + ctx.name() + " cc" + std::to_string(ctx.compute_capability()) + " sms " +
         std::to_string(ctx.sm_count()) + " cublasLt " + std::to_string(cublasLtGetVersion());
}

std::vector<cublasLtMatmulAlgo_t> heuristic_candidates(const CublasLtHandle& handle,
                                                       const GemmSpec& spec,
                                                       const CublasLtDescriptors& descriptors,
                                                       size_t workspace_bytes,
                                                       size_t max_candidates) {
  const std::string key = spec.to_string() + (spec.shared_b ? " shared B" : "") +
                          (spec.allow_tf32 ? " tf32" : "") + " workspace " +
                          std::to_string(workspace_bytes) + " at most " +
                          std::to_string(max_candidates) + cublaslt_device_key();
  Memo& m = memo();
  {
    std::lock_guard lock(m.mutex);
    if (const auto it = m.by_key.find(key); it != m.by_key.end()) return it->second;
  }
  std::vector<cublasLtMatmulAlgo_t> found;
  const std::optional<std::string> stored = stored_choice(kKind, key);
  if (!stored || !decode_algorithms(*stored, found) || found.empty() ||
      found.size() > max_candidates) {
    found = ask_heuristic(handle, descriptors, workspace_bytes, max_candidates);
    if (!found.empty()) store_choice(kKind, key, encode_algorithms(found));
  }
  std::lock_guard lock(m.mutex);
  m.by_key.emplace(key, found);
  return found;
}

std::string encode_algorithms(const std::vector<cublasLtMatmulAlgo_t>& algorithms) {
  std::string out;
  char word[17];
  for (const cublasLtMatmulAlgo_t& a : algorithms) {
    if (!out.empty()) out += ' ';
    for (uint64_t v : a.data) {
      std::snprintf(word, sizeof word, "%016llx", static_cast<unsigned long long>(v));
      out += word;
    }
  }
  return out;
}

bool decode_algorithms(const std::string& text, std::vector<cublasLtMatmulAlgo_t>& algorithms) {
  constexpr size_t kWords = sizeof(cublasLtMatmulAlgo_t::data) / sizeof(uint64_t);
  constexpr size_t kChars = 16 * kWords;
  algorithms.clear();
  size_t pos = 0;
  while (pos < text.size()) {
    if (text.size() - pos < kChars) return false;
    cublasLtMatmulAlgo_t a{};
    for (size_t w = 0; w < kWords; ++w) {
      uint64_t v = 0;
      for (size_t i = 0; i < 16; ++i) {
        const char c = text[pos + 16 * w + i];
        const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (digit < 0) return false;
        v = (v << 4) | static_cast<uint64_t>(digit);
      }
      a.data[w] = v;
    }
    algorithms.push_back(a);
    pos += kChars;
    if (pos < text.size() && text[pos++] != ' ') return false;
  }
  return true;
}

}  // namespace gf::cuda
