// The operation graph: one matmul into a virtual f32 product, then an optional bias add and an
// optional activation, each a pointwise operation on virtual f32 tensors; only the last writes
// memory, in the I/O type. cuDNN's runtime fusion engines take this shape of graph.
#include "runtime/cuda/cudnn_matmul.h"

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

#include "graphfuse/error.h"
#include "runtime/cuda/cudnn_conv.h"

namespace gf::cuda {

const char* matmul_activation_name(MatmulActivation a) {
  switch (a) {
    case MatmulActivation::kNone:
      return "none";
    case MatmulActivation::kRelu:
      return "relu";
    case MatmulActivation::kGeluErf:
      return "gelu";
    case MatmulActivation::kGeluTanh:
      return "gelu_tanh";
  }
  return "?";
}

std::string CudnnMatmulSpec::to_string() const {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%lldx%lldx%lld %s%s", static_cast<long long>(m),
                static_cast<long long>(k), static_cast<long long>(n),
                std::string(dtype_name(dtype)).c_str(), b_transposed ? " B^T" : "");
  std::string s = buf;
  if (bias || activation != MatmulActivation::kNone) s += " ";
  if (bias) s += activation != MatmulActivation::kNone ? "bias+" : "bias";
  if (activation != MatmulActivation::kNone) s += matmul_activation_name(activation);
  return s;
}

}  // namespace gf::cuda

#ifdef GF_HAVE_CUDNN

#include "runtime/cuda/cudnn_op_graph.h"

namespace gf::cuda {

namespace {

using cudnn_backend::Descriptor;

enum : int64_t { kA = 1, kB, kBias, kC, kFirstVirtual = 100 };

// The largest workspace an engine may ask for; a plan that wants more is skipped.
constexpr int64_t kMaxWorkspaceBytes = int64_t{64} << 20;

void check_spec(const CudnnMatmulSpec& s, const std::string& what) {
  if (s.m < 1 || s.n < 1 || s.k < 1)
    throw Error(ErrorCode::kInvalidArgument, what + ": m, n and k must be positive");
  if (s.dtype != DType::kF16 && s.dtype != DType::kBF16)
    throw Error(ErrorCode::kUnsupported, what + ": cuDNN's fused matmul is taken for f16 or bf16");
  // 16-byte rows: the engines load whole vectors along the contiguous dims.
  if (s.k % 8 != 0 || s.n % 8 != 0)
    throw Error(ErrorCode::kUnsupported,
                what + ": k and n must be multiples of 8 (16-byte rows) for cuDNN's fused matmul");
}

}  // namespace

struct CudnnMatmul::State {
  CudnnMatmulSpec spec;
  std::string what;
  // Shared by every call of this spec on the handle (CudnnHandle::shared_plan).
  std::shared_ptr<const std::vector<cudnn_backend::BuiltPlan>> plans;
  size_t chosen = 0;

  const cudnn_backend::BuiltPlan& plan() const { return (*plans)[chosen]; }

  Descriptor variant_pack(const CudnnMatmulBuffers& b) const {
    if (!b.a || !b.b || !b.c || (spec.bias && !b.bias) || (plan().workspace > 0 && !b.workspace)) {
      throw Error(ErrorCode::kInvalidArgument,
                  what + ": a null buffer (A, B, C, the bias or the workspace)");
    }
    std::vector<int64_t> uids = {kA, kB, kC};
    std::vector<void*> ptrs = {const_cast<void*>(b.a), const_cast<void*>(b.b), b.c};
    if (spec.bias) uids.push_back(kBias), ptrs.push_back(const_cast<void*>(b.bias));
    return cudnn_backend::variant_pack(uids, ptrs, b.workspace);
  }

  void native_graph_call(cudnnHandle_t handle, cudnn_backend::NativeGraphCall call,
                         const CudnnMatmulBuffers& buffers, cudaGraph_t graph) const {
    cudnn_backend::native_graph_call(handle, call, plan().plan, plan().engine,
                                     variant_pack(buffers), graph, what);
  }
};

namespace {

// The plans that build for `spec`'s operation graph, at most `wanted`, in the heuristics' order.
std::shared_ptr<const std::vector<cudnn_backend::BuiltPlan>> build_plans(
    const CudnnHandle& handle, const CudnnMatmulSpec& spec, size_t wanted) {
  const cudnnHandle_t h = static_cast<cudnnHandle_t>(handle.get());
  const cudnnDataType_t io = spec.dtype == DType::kBF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
  const int64_t m = spec.m, n = spec.n, k = spec.k;
  cudnn_backend::OpGraphBuilder gb(kFirstVirtual);
  const Descriptor& a = gb.tensor(kA, {1, m, k}, {m * k, k, 1}, io, false);
  const Descriptor& b = gb.tensor(
      kB, {1, k, n},
      spec.b_transposed ? std::vector<int64_t>{n * k, 1, k} : std::vector<int64_t>{n * k, n, 1}, io,
      false);
  const Descriptor& c = gb.tensor(kC, {1, m, n}, {m * n, n, 1}, io, false);
  const bool act = spec.activation != MatmulActivation::kNone;
  const std::vector<int64_t> out = {1, m, n};
  // Each stage writes C when it is the last, else a virtual f32 tensor.
  const Descriptor& product = spec.bias || act ? gb.virtual_like(out) : c;
  gb.matmul(a, b, product);
  const Descriptor* last = &product;
  if (spec.bias) {
    const Descriptor& bias = gb.tensor(kBias, {1, 1, n}, {n, n, 1}, io, false);
    const Descriptor& sum = act ? gb.virtual_like(out) : c;
    gb.pointwise(CUDNN_POINTWISE_ADD, CUDNN_DATA_FLOAT, *last, &bias, sum);
    last = &sum;
  }
  if (act) {
    const cudnnPointwiseMode_t mode =
        spec.activation == MatmulActivation::kRelu       ? CUDNN_POINTWISE_RELU_FWD
        : spec.activation == MatmulActivation::kGeluTanh ? CUDNN_POINTWISE_GELU_APPROX_TANH_FWD
                                                         : CUDNN_POINTWISE_GELU_FWD;
    gb.pointwise(mode, CUDNN_DATA_FLOAT, *last, nullptr, c);
  }
  const Descriptor graph = gb.finish(h);
  std::string last_error;
  auto plans = std::make_shared<std::vector<cudnn_backend::BuiltPlan>>(
      cudnn_backend::buildable_plans(h, graph, kMaxWorkspaceBytes, wanted, nullptr, last_error));
  if (plans->empty()) throw Error(ErrorCode::kUnsupported, "no cuDNN engine (" + last_error + ")");
  return std::shared_ptr<const std::vector<cudnn_backend::BuiltPlan>>(std::move(plans));
}

}  // namespace

CudnnMatmul::CudnnMatmul(const CudnnHandle& handle, const CudnnMatmulSpec& spec, std::string what,
                         size_t max_candidates)
    : handle_(handle), state_(std::make_unique<State>()) {
  State& s = *state_;
  s.spec = spec;
  s.what = std::move(what) + " [matmul " + spec.to_string() + "]";
  check_spec(spec, s.what);
  const size_t wanted = std::max<size_t>(max_candidates, 1);
  try {
    s.plans = handle.shared_plan<std::vector<cudnn_backend::BuiltPlan>>(
        "matmul " + spec.to_string() + " plans " + std::to_string(wanted),
        [&] { return build_plans(handle, spec, wanted); });
  } catch (const Error& e) {
    throw Error(e.code(), s.what + ": " + e.what());
  }
}

CudnnMatmul::~CudnnMatmul() = default;

const CudnnMatmulSpec& CudnnMatmul::spec() const {
  return state_->spec;
}
size_t CudnnMatmul::candidates() const {
  return state_->plans->size();
}
size_t CudnnMatmul::chosen() const {
  return state_->chosen;
}
void CudnnMatmul::choose(size_t candidate) {
  if (candidate >= state_->plans->size()) {
    throw Error(ErrorCode::kInvalidArgument, state_->what + ": no candidate " +
                                                 std::to_string(candidate) + " (there are " +
                                                 std::to_string(state_->plans->size()) + ")");
  }
  state_->chosen = candidate;
}
std::string CudnnMatmul::engine() const {
  const cudnn_backend::EngineInfo& e = state_->plan().engine;
  return "engine " + std::to_string(e.index) + (e.native_graph ? " (native CUDA graph)" : "");
}
size_t CudnnMatmul::workspace_bytes() const {
  return static_cast<size_t>(state_->plan().workspace);
}
bool CudnnMatmul::native_graph() const {
  return state_->plan().engine.native_graph;
}

void CudnnMatmul::run(const CudnnMatmulBuffers& buffers, cudaStream_t stream) const {
  cudnn_backend::execute(static_cast<cudnnHandle_t>(handle_.get()), state_->plan().plan,
                         state_->variant_pack(buffers), stream, state_->what);
}

void CudnnMatmul::populate(const CudnnMatmulBuffers& buffers, cudaGraph_t graph) const {
  state_->native_graph_call(static_cast<cudnnHandle_t>(handle_.get()),
                            cudnn_backend::NativeGraphCall::kPopulate, buffers, graph);
}

void CudnnMatmul::update(const CudnnMatmulBuffers& buffers, cudaGraph_t graph) const {
  state_->native_graph_call(static_cast<cudnnHandle_t>(handle_.get()),
                            cudnn_backend::NativeGraphCall::kUpdate, buffers, graph);
}

}  // namespace gf::cuda

#else  // no cuDNN in this build: every entry refuses.

namespace gf::cuda {

struct CudnnMatmul::State {
  CudnnMatmulSpec spec;
};

CudnnMatmul::CudnnMatmul(const CudnnHandle& handle, const CudnnMatmulSpec& spec, std::string what,
                         size_t)
    : handle_(handle) {
  throw Error(ErrorCode::kUnsupported,
              what + " [matmul " + spec.to_string() + "]: this build has no cuDNN");
}
CudnnMatmul::~CudnnMatmul() = default;
const CudnnMatmulSpec& CudnnMatmul::spec() const {
  return state_->spec;
}
size_t CudnnMatmul::candidates() const {
  return 0;
}
size_t CudnnMatmul::chosen() const {
  return 0;
}
void CudnnMatmul::choose(size_t) {}
std::string CudnnMatmul::engine() const {
  return "none";
}
size_t CudnnMatmul::workspace_bytes() const {
  return 0;
}
bool CudnnMatmul::native_graph() const {
  return false;
}
void CudnnMatmul::run(const CudnnMatmulBuffers&, cudaStream_t) const {}
void CudnnMatmul::populate(const CudnnMatmulBuffers&, cudaGraph_t) const {}
void CudnnMatmul::update(const CudnnMatmulBuffers&, cudaGraph_t) const {}

}  // namespace gf::cuda

#endif  // GF_HAVE_CUDNN
