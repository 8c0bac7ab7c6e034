// cuBLASLt's heuristic, asked once per call shape: its candidate algorithms are kept in memory
// for the process and on disk beside the kernel cache (timed_choices.h), so that a warm compile
// asks nothing. cuBLASLt documents cublasLtMatmulAlgo_t as trivially serialisable for reuse with
// the same library version; the key names the version, the device and every descriptor setting.
#pragma once

#include <cublasLt.h>

#include <cstddef>
#include <string>
#include <vector>

namespace gf::cuda {

struct GemmSpec;
class CublasLtHandle;

// " on <device> cc<N> sms <N> cublasLt <version>": what every cuBLASLt choice depends on beyond
// the call itself.
std::string cublaslt_device_key();

// The descriptors of one CublasLtGemm, as its constructor built them.
struct CublasLtDescriptors {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
};

// The algorithms cuBLASLt's heuristic offers for `spec` with at most `workspace_bytes` of
// workspace, best first by its estimate, at most `max_candidates`; empty when it has none.
// Throws kDeviceError naming the call when cuBLASLt fails.
std::vector<cublasLtMatmulAlgo_t> heuristic_candidates(const CublasLtHandle& handle,
                                                       const GemmSpec& spec,
                                                       const CublasLtDescriptors& descriptors,
                                                       size_t workspace_bytes,
                                                       size_t max_candidates);

// Variations of `seeds` (the heuristic's candidates: every tile, CTA swizzling and custom option
// their algorithm lists, their stages and cluster shape kept), then every configuration of every
// algorithm cuBLASLt has for the descriptors' types (tile, stages, CTA swizzling, custom option; no
// split-K) that cublasLtMatmulAlgoCheck accepts for this call with at most `workspace_bytes` of
// workspace, at most `limit` of them, in cuBLASLt's order: a search wider than the heuristic's
// candidates, for timing. Throws kDeviceError naming the call when cuBLASLt fails other than by
// refusing a configuration.
std::vector<cublasLtMatmulAlgo_t> enumerated_candidates(
    const CublasLtHandle& handle, const CublasLtDescriptors& descriptors,
    const std::vector<cublasLtMatmulAlgo_t>& seeds, size_t workspace_bytes, size_t limit);

// Encodes algorithms as text for the disk and back; decode returns false on malformed text.
std::string encode_algorithms(const std::vector<cublasLtMatmulAlgo_t>& algorithms);
bool decode_algorithms(const std::string& text, std::vector<cublasLtMatmulAlgo_t>& algorithms);

}  // namespace gf::cuda
