// Running a graph. A Session owns a checked, shape-inferred graph and runs it on one device.
//
// Thread safety: run() may be called from several threads at once on one Session. On the CPU
// each call works on its own buffers; on CUDA, calls take turns on the device arena that the
// programs of all shapes share (SessionOptions::share_device_arena).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graphfuse/device.h"
#include "graphfuse/graph.h"
#include "graphfuse/shape.h"

namespace gf {

// How the CPU runs a graph: generated fused kernels (compiled per input shape, cached on disk),
// or the unfused reference interpreter (the test oracle).
enum class CpuBackend { kFused, kReference };

// The arithmetic a CUDA session computes in. kFp32: f32 throughout. kTf32: f32 data, with GEMMs
// and convolutions on the tensor cores in TF32 (10-bit mantissa products). kFp16 / kBf16: the
// graph's f32 compute converted to 16 bits (passes/convert_precision.h: inputs and outputs stay
// f32, a few range-sensitive ops stay f32). The CPU computes f32 exactly: it takes kFp32 and
// kTf32 (ignored), and refuses kFp16 / kBf16.
enum class Precision { kFp32, kTf32, kFp16, kBf16 };
std::string_view precision_name(Precision p);

// How a CUDA session launches a compiled program: kGraph as one CUDA graph (built and
// instantiated once per program, one launch per run), kEager step by step on one stream. A
// program with host steps runs eagerly in either mode. The CPU ignores it.
enum class ExecutionMode { kEager, kGraph };

// Which MatMul/Gemm products a CUDA session runs as generated skinny GEMM kernels (one that
// streams the weight once, with its bias, Relu/Gelu and residual add fused) instead of
// cuBLASLt. kAuto: where the kernel measured faster (runtime/cuda/skinny_gemm_step.h: weights
// stored [n, k], up to kSkinnyGemmAutoMaxRows rows); kAlways: every product it can run (1..16
// rows after folding the batch dims, either layout); kOff: none. The CPU ignores it.
enum class SkinnyGemm { kAuto, kAlways, kOff };
std::string_view skinny_gemm_name(SkinnyGemm s);
// "auto", "always" or "off"; nullopt for anything else.
std::optional<SkinnyGemm> skinny_gemm_from_name(std::string_view name);

// How a CUDA session runs its f16/bf16 Attention nodes that have no mask or softcap: kGenerated,
// always our own kernels; kCudnn, cuDNN's fused attention wherever cuDNN takes the node
// (runtime/cuda/cudnn_sdpa.h), our kernels elsewhere; kAuto, both timed once per shape when the
// program is compiled and the faster kept, for nodes large enough that the time matters (at
// least kAttentionTimedMinFlops of work or kAttentionTimedMinKvBytes of keys and values; below
// that, ours, which costs no cuDNN compile). The CPU ignores it.
enum class AttentionPath { kAuto, kGenerated, kCudnn };
inline constexpr double kAttentionTimedMinFlops = 1e9;
inline constexpr double kAttentionTimedMinKvBytes = 16e6;
std::string_view attention_path_name(AttentionPath a);
// "auto", "generated" or "cudnn"; nullopt for anything else.
std::optional<AttentionPath> attention_path_from_name(std::string_view name);

// How a CUDA session runs the f16/bf16 products (with their bias and activation epilogue) that
// both cuBLASLt and cuDNN's fused matmul (runtime/cuda/cudnn_matmul.h) take. kAuto (the
// default): cuBLASLt, but a product whose epilogue holds an exact (erf) Gelu runs as our
// tensor-core GEMM (kGenerated below) where that takes it, the Gelu in its one kernel: faster
// at BERT's MLP shapes than cuBLASLt followed by a Gelu kernel, which is what such a product
// becomes elsewhere (bench/README.md). kCublasLt: cuBLASLt only, whose GELU is the tanh
// approximation, so an exact Gelu after a product is a kernel of its own. kCudnn: cuDNN wherever it
// takes the product and its epilogue, the exact Gelu included. kTimed: cuDNN where the epilogue
// holds an exact Gelu, elsewhere both timed once per shape (products of at least
// kGemmTunedMinFlops) and the faster kept. cuDNN is not the default because building its plans
// costs about 0.3 s per engine configuration at every compile, warm or cold (a GPT-2 or BERT export
// took 8-9 s cold and 3-4 s warm with kTimed on an H200, against 2 s and 0.1-0.2 s), for gains of a
// few percent at most model shapes (bench/README.md). kGenerated: our own tensor-core GEMM
// (codegen/cuda/tensor_core_gemm.h) wherever it takes the product and its epilogue, the exact Gelu
// included, which is one kernel with no library call; it runs on sm_90 GPUs (H100, H200) only, and
// f16/bf16 products with k a multiple of 8, B a constant weight (stored [n, k]) and no batch;
// cuBLASLt takes the rest. Products too skinny for any of these (SkinnyGemm) are not affected. The
// CPU ignores it.
enum class GemmLibrary { kAuto, kCublasLt, kCudnn, kTimed, kGenerated };
std::string_view gemm_library_name(GemmLibrary l);
// "auto", "cublaslt", "cudnn", "timed" or "generated"; nullopt for anything else.
std::optional<GemmLibrary> gemm_library_from_name(std::string_view name);

struct SessionOptions {
  Device device = Device::kCpu;
  // kReference runs the reference interpreter on the host, whatever the device.
  CpuBackend cpu_backend = CpuBackend::kFused;
  Precision precision = Precision::kFp32;
  ExecutionMode mode = ExecutionMode::kGraph;
  // CUDA: a kernel may start while the kernel it depends on finishes (programmatic dependent
  // launch, sm_90 and later), which hides most of the gap between dependent kernels: graph mode
  // makes those edges programmatic, eager mode launches such a kernel with programmatic stream
  // serialization after a kernel of ours. The results are the same either way; off is there to
  // compare.
  bool programmatic_launch = true;
  // CUDA: which decode-shaped products run as skinny GEMM kernels (see SkinnyGemm).
  SkinnyGemm skinny_gemm = SkinnyGemm::kAuto;
  // CUDA: each skinny GEMM kernel starts moving the weights of the skinny product this many
  // after it towards L2 (where both weights are constants of at most 8 MiB), so that product's
  // reads are under way before its own kernel can start; 0: none. At least 0.
  int skinny_prefetch_distance = 1;
  // CUDA: whose attention runs (see AttentionPath).
  AttentionPath attention = AttentionPath::kAuto;
  // CUDA: which library runs the products the generated kernels do not (see GemmLibrary).
  GemmLibrary gemm_library = GemmLibrary::kAuto;
  // CUDA: a generated kernel rounds the result of every f16/bf16 op to its format, as the graph
  // says and the reference interpreter does. false keeps f32 between the ops of one kernel and
  // rounds only what it stores (as torch.compile does): a long chain of 16-bit ops runs at the
  // memory's speed instead of the conversions', and each output is as close to the exact value
  // or closer, but not bit-equal to the per-op result. The CPU ignores it.
  bool round_16bit_intermediates = true;
  // Graph passes (see `graphfuse plan --help` for their names) to leave out, and one whose
  // result is printed to stderr when a program is compiled ("" for none).
  std::vector<std::string> disabled_passes{};
  std::string dump_after_pass{};
  // Compiled programs kept per session, one per distinct set of input shapes (least recently
  // used first out).
  int max_cached_programs = 8;
  // Bound on the bytes the kept programs hold together (0: no bound), kept by dropping the least
  // recently used. A program's bytes: on CUDA its arena and its library and skinny GEMM workspaces
  // (the weights are left out: the session's programs share one device copy of each); on the CPU
  // its host arena (constants are left out: most share the session graph's storage). A program
  // bigger than the bound by itself still runs, but is not kept. The bound can be passed for a
  // moment: a program being compiled counts once it is kept, and a dropped program that a
  // concurrent run is using is freed when that run ends.
  uint64_t max_cached_program_bytes = 0;
  // Shape buckets: symbolic dim name (as the graph's inputs declare it, e.g. "batch") -> sizes,
  // ascending. A run whose dim is n runs the program of the smallest size >= n: inputs are
  // zero-padded at the end of every axis with that dim, and outputs cut back along every axis
  // whose inferred dim has that name; sizes above the largest run unpadded. Valid only where
  // positions along the dim do not affect one another (a batch) or only later ones (the
  // sequence of a decoder with causal attention): padding is zeros (token id 0), and anything
  // reading across the dim (a sum over it, bidirectional attention) sees them. The session
  // refuses a dim no input declares. Ignored by CpuBackend::kReference (it compiles nothing).
  std::map<std::string, std::vector<int64_t>> shape_buckets{};
  // Cap on the host memory that intermediates of this session's runs may hold at once, summed
  // over concurrent runs; 0 means the machine's physical memory. A run that would pass it fails
  // with kOutOfMemory before allocating, and the session stays usable.
  uint64_t host_memory_limit_bytes = 0;
  // Cap on the device memory this session's CUDA programs hold together (arenas, weights,
  // library workspaces, pointer tables; the libraries' own handles are not counted); 0: none
  // but the device's. Compiling a program that would pass it fails with kOutOfMemory naming what
  // it tried to allocate; the programs already compiled keep running.
  uint64_t device_memory_limit_bytes = 0;
  // CUDA: the programs of all input shapes compute in one device arena, as large as the largest
  // needs (its addresses never move, so their CUDA graphs stay valid as it grows), and take turns
  // on it: runs of different shapes are ordered one after another on the device, as runs of one
  // shape always are. false: each program has an arena of its own, and programs of different
  // shapes may run at the same time (from several threads, on several streams).
  bool share_device_arena = true;
};

namespace ref {
class HostMemoryBudget;
}
namespace cpu {
class FusedProgram;
}
struct CompiledProgram;

// Where the most recently compiled program's compile time went, in seconds of wall time.
struct CompileSeconds {
  double passes = 0;   // shapes bound, constants folded, graph passes, precision conversion
  double steps = 0;    // CUDA: fusion plan, lowering, kernel sources, library plans
  double libraries = 0;  // CUDA: of `steps`, library plans (cuBLASLt, cuDNN) and timed choices
  double kernels = 0;  // CUDA: kernels compiled (NVRTC) or read from the cache, and loaded
  double memory = 0;   // CUDA: memory plan, arena, pointer tables, bindings, the weights' wait
  double weights = 0;  // CUDA: the weights laid out and uploaded, on a thread of their own
                       // from the end of `steps` on (beside `kernels` and `memory`)
  double graph = 0;    // CUDA: its CUDA graph built and instantiated
  double total = 0;    // all of it (on the CPU: passes, then the program's plan and JIT)
};

struct SessionStats {
  int programs_compiled =
      0;  // programs compiled so far (a shape evicted and seen again counts twice)
  int program_cache_hits = 0;
  int program_cache_misses = 0;
  int program_evictions = 0;          // programs dropped from the cache (a too-big one at once)
  int cuda_graph_programs = 0;        // programs compiled that run as one CUDA graph (0 on the CPU)
  int cached_programs = 0;            // programs kept now
  uint64_t cached_program_bytes = 0;  // the bytes they hold (see max_cached_program_bytes)
  uint64_t shared_arena_bytes = 0;    // CUDA: device memory behind the shared arena now
  int padded_runs = 0;                // runs padded up to a shape bucket
  // Of the most recently compiled program:
  int fused_kernels = 0;      // generated kernels (and, on CUDA, hand-written anchor kernels)
  int library_calls = 0;      // CUDA: cuBLASLt / cuDNN steps
  int tuned_gemms = 0;        // CUDA: of library_calls, GEMMs whose cuBLASLt algorithm was timed
  int skinny_gemm_steps = 0;  // CUDA: of fused_kernels, GEMMs run as skinny GEMM kernels
  int cudnn_attention_steps = 0;  // CUDA: of library_calls, attention through cuDNN
  int cudnn_gemm_steps = 0;       // CUDA: of library_calls, products through cuDNN (GemmLibrary)
  int tensor_core_gemm_steps = 0;  // CUDA: of fused_kernels, products through our tensor-core GEMM
  int reference_steps =
      0;  // CPU: reference-kernel steps (BLAS anchors, fallbacks); CUDA: host steps
  int fallback_nodes = 0;  // nodes the fused backend could not take (run by reference kernels)
  std::vector<std::string> fallback_reasons;  // why, one line per fallback
  uint64_t arena_bytes = 0;                   // its arena (device memory for CUDA)
  uint64_t arena_lower_bound = 0;  // the most bytes live at once: no placement does better
  int graph_nodes = 0;             // CUDA: nodes of its CUDA graph; 0 when it runs eagerly
  int programmatic_edges = 0;  // CUDA: of its graph's edges, those that let a kernel start early
  // CUDA: of its inputs and outputs, those a DeviceProgram run (or a flat populate) on device
  // buffers reads or writes in place, without a copy, when the buffer allows (cuda_graph.h).
  int direct_bindings = 0;
  int data_dependent_shape_runs = 0;  // runs whose shapes depend on input data: interpreted
  CompileSeconds compile_seconds;     // of the most recently compiled program
};

class Session {
 public:
  // Verifies the graph and infers its types; throws gf::Error naming the node on a bad graph.
  explicit Session(Graph graph, SessionOptions options = {});

  // Inputs in the order of graph().inputs(); outputs in the order of graph().outputs().
  // Each input must match its declared dtype and rank, and its static dims.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;
  std::map<std::string, Tensor> run_named(const std::map<std::string, Tensor>& inputs) const;

  const Graph& graph() const { return graph_; }
  Device device() const { return options_.device; }
  // Bytes of intermediates held now / at most so far, over all runs of this session.
  uint64_t host_bytes_in_use() const;
  uint64_t host_bytes_peak() const;
  // Device bytes the session's CUDA programs hold now (arenas, weights, workspaces, tables; 0 on
  // the CPU): what device_memory_limit_bytes caps.
  uint64_t device_bytes_in_use() const;
  SessionStats stats() const;

 private:
  friend class DeviceProgram;
  // Null when the graph's shapes depend on input data (it then runs on the interpreter).
  std::shared_ptr<const CompiledProgram> program_for(const std::vector<Tensor>& inputs) const;
  std::shared_ptr<const CompiledProgram> program_for_dims(
      const std::vector<std::vector<int64_t>>& dims) const;
  // Checks the types against the declared inputs first.
  std::shared_ptr<const CompiledProgram> program_for_types(
      const std::vector<TensorType>& inputs) const;

  std::vector<Tensor> run_unbucketed(const std::vector<Tensor>& inputs) const;

  Graph graph_;
  SessionOptions options_;
  std::shared_ptr<ref::HostMemoryBudget> budget_;
  struct Programs;  // the program cache, shape buckets and stats
  std::shared_ptr<Programs> programs_;
};

}  // namespace gf
