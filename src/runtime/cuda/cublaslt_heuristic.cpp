#include "runtime/cuda/cublaslt_heuristic.h"

#include <algorithm>
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

namespace {

// A capability of `algo` that is an array of uint32_t (tile or stages ids); {fallback} when the
// algorithm lists none.
std::vector<uint32_t> cap_ids(const cublasLtMatmulAlgo_t& algo,
                              cublasLtMatmulAlgoCapAttributes_t attr, uint32_t fallback) {
  size_t bytes = 0;
  if (cublasLtMatmulAlgoCapGetAttribute(&algo, attr, nullptr, 0, &bytes) != CUBLAS_STATUS_SUCCESS ||
      bytes == 0)
    return {fallback};
  std::vector<uint32_t> ids(bytes / sizeof(uint32_t));
  if (cublasLtMatmulAlgoCapGetAttribute(&algo, attr, ids.data(), bytes, &bytes) !=
      CUBLAS_STATUS_SUCCESS)
    return {fallback};
  ids.resize(bytes / sizeof(uint32_t));
  return ids.empty() ? std::vector<uint32_t>{fallback} : ids;
}

template <class T>
T cap_value(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t attr) {
  T v{};
  size_t written = 0;
  if (cublasLtMatmulAlgoCapGetAttribute(&algo, attr, &v, sizeof(v), &written) !=
      CUBLAS_STATUS_SUCCESS)
    return T{};
  return v;
}

template <class T>
bool set_config(cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr, T value) {
  return cublasLtMatmulAlgoConfigSetAttribute(&algo, attr, &value, sizeof(value)) ==
         CUBLAS_STATUS_SUCCESS;
}

}  // namespace

std::vector<cublasLtMatmulAlgo_t> enumerated_candidates(
    const CublasLtHandle& handle, const CublasLtDescriptors& d,
    const std::vector<cublasLtMatmulAlgo_t>& seeds, size_t workspace_bytes, size_t limit) {
  std::vector<cublasLtMatmulAlgo_t> out;
  const auto accept = [&](const cublasLtMatmulAlgo_t& algo) {
    cublasLtMatmulHeuristicResult_t result{};
    if (cublasLtMatmulAlgoCheck(handle.get(), d.desc, d.a, d.b, d.c, d.c, &algo, &result) !=
            CUBLAS_STATUS_SUCCESS ||
        result.state != CUBLAS_STATUS_SUCCESS || result.workspaceSize > workspace_bytes)
      return;
    for (const cublasLtMatmulAlgo_t& s : seeds)
      if (std::equal(std::begin(s.data), std::end(s.data), std::begin(algo.data))) return;
    for (const cublasLtMatmulAlgo_t& s : out)
      if (std::equal(std::begin(s.data), std::end(s.data), std::begin(algo.data))) return;
    out.push_back(algo);
  };
  // `base` in every tile, swizzle and custom option (up to custom_cap) it lists, and in each of
  // `stages` (none given: its own kept).
  const auto vary = [&](const cublasLtMatmulAlgo_t& base, const std::vector<uint32_t>& stages,
                        int32_t custom_cap) {
    const std::vector<uint32_t> tiles =
        cap_ids(base, CUBLASLT_ALGO_CAP_TILE_IDS, CUBLASLT_MATMUL_TILE_UNDEFINED);
    const bool swizzle = cap_value<int32_t>(base, CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT) != 0;
    const int32_t custom_max =
        std::min(cap_value<int32_t>(base, CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX), custom_cap);
    const size_t stage_count = std::max<size_t>(stages.size(), 1);
    for (uint32_t tile : tiles)
      for (size_t st = 0; st < stage_count; ++st)
        for (uint32_t swz = 0; swz <= (swizzle ? 1u : 0u); ++swz)
          for (int32_t custom = 0; custom <= custom_max && out.size() < limit; ++custom) {
            cublasLtMatmulAlgo_t algo = base;
            if (set_config(algo, CUBLASLT_ALGO_CONFIG_TILE_ID, tile) &&
                (stages.empty() || set_config(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, stages[st])) &&
                set_config(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, swz) &&
                set_config(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, static_cast<uint32_t>(custom)))
              accept(algo);
          }
  };
  // Around each seed: its stages and cluster shape kept.
  for (const cublasLtMatmulAlgo_t& seed : seeds) vary(seed, {}, 15);
  cublasComputeType_t compute{};
  cudaDataType_t scale{}, a_type{}, b_type{}, c_type{};
  size_t written = 0;
  check_cublas(cublasLtMatmulDescGetAttribute(d.desc, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, &compute,
                                              sizeof(compute), &written),
               "cublasLtMatmulDescGetAttribute");
  check_cublas(cublasLtMatmulDescGetAttribute(d.desc, CUBLASLT_MATMUL_DESC_SCALE_TYPE, &scale,
                                              sizeof(scale), &written),
               "cublasLtMatmulDescGetAttribute");
  const auto layout_type = [&](cublasLtMatrixLayout_t l, cudaDataType_t& t) {
    check_cublas(
        cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_TYPE, &t, sizeof(t), &written),
        "cublasLtMatrixLayoutGetAttribute");
  };
  layout_type(d.a, a_type);
  layout_type(d.b, b_type);
  layout_type(d.c, c_type);
  std::vector<int> ids(256);
  int id_count = 0;
  check_cublas(
      cublasLtMatmulAlgoGetIds(handle.get(), compute, scale, a_type, b_type, c_type, c_type,
                               static_cast<int>(ids.size()), ids.data(), &id_count),
      "cublasLtMatmulAlgoGetIds");
  // Then every algorithm cuBLASLt lists, in each tile, stages, swizzle and custom option.
  for (int i = 0; i < id_count && out.size() < limit; ++i) {
    cublasLtMatmulAlgo_t base{};
    if (cublasLtMatmulAlgoInit(handle.get(), compute, scale, a_type, b_type, c_type, c_type,
                               ids[static_cast<size_t>(i)], &base) != CUBLAS_STATUS_SUCCESS)
      continue;
    vary(base, cap_ids(base, CUBLASLT_ALGO_CAP_STAGES_IDS, CUBLASLT_MATMUL_STAGES_UNDEFINED), 7);
  }
  return out;
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
