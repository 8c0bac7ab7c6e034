// cuDNN's fused attention as a backend operation graph. The graph is the one cuDNN's fused
// attention engines recognise (the form cuDNN's frontend builds for its SDPA node): two
// matmuls around a scale, an optional causal select and a softmax written as max, subtract,
// exp, sum and divide, every intermediate a virtual f32 tensor that never reaches memory.
#include "runtime/cuda/cudnn_sdpa.h"

#include <cstdio>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "graphfuse/error.h"
#include "runtime/cuda/cudnn_conv.h"

namespace gf::cuda {

SdpaDims SdpaDims::contiguous(int64_t batch, int64_t q_heads, int64_t kv_heads, int64_t q_len,
                              int64_t kv_len, int64_t head_dim, DType dtype, bool causal,
                              float scale) {
  SdpaDims d;
  d.batch = batch, d.q_heads = q_heads, d.kv_heads = kv_heads;
  d.q_len = q_len, d.kv_len = kv_len, d.head_dim = head_dim;
  d.q_strides = d.o_strides = {q_heads * q_len * head_dim, q_len * head_dim, head_dim, 1};
  d.k_strides = d.v_strides = {kv_heads * kv_len * head_dim, kv_len * head_dim, head_dim, 1};
  d.dtype = dtype, d.causal = causal, d.scale = scale;
  return d;
}

std::string SdpaDims::to_string() const {
  char buf[160];
  std::snprintf(buf, sizeof buf, "B=%lld Hq=%lld Hkv=%lld Sq=%lld Skv=%lld D=%lld %s%s",
                static_cast<long long>(batch), static_cast<long long>(q_heads),
                static_cast<long long>(kv_heads), static_cast<long long>(q_len),
                static_cast<long long>(kv_len), static_cast<long long>(head_dim),
                std::string(dtype_name(dtype)).c_str(), causal ? " causal" : "");
  return buf;
}

}  // namespace gf::cuda

#ifdef GF_HAVE_CUDNN

#include "runtime/cuda/cudnn_op_graph.h"

namespace gf::cuda {

namespace {

using cudnn_backend::Descriptor;

// The tensors the caller binds, by unique id; the intermediates take ids from kFirstVirtual.
enum : int64_t { kQ = 1, kK, kV, kO, kScale, kNegInf, kFirstVirtual = 100 };

// The largest workspace an engine may ask for; a plan that wants more is skipped.
constexpr int64_t kMaxWorkspaceBytes = int64_t{256} << 20;
// Configurations tried before giving up on finding one with the native CUDA graph note.
constexpr size_t kMaxPlansTried = 64;

std::vector<int64_t> as_vector(const std::array<int64_t, 4>& a) {
  return {a[0], a[1], a[2], a[3]};
}

}  // namespace

size_t cudnn_runtime_version() {
  return cudnnGetVersion();
}

struct CudnnSdpa::State {
  SdpaDims dims;
  std::string what;  // "node 'x' (Attention): B=.. Hq=.." for errors
  // Shared by every call of these dims on the handle (CudnnHandle::shared_plan).
  std::shared_ptr<const cudnn_backend::BuiltPlan> plan;
  float scale = 0;
  float neg_inf = -std::numeric_limits<float>::infinity();

  void native_graph_call(cudnnHandle_t handle, cudnn_backend::NativeGraphCall call,
                         const SdpaBuffers& buffers, cudaGraph_t graph) const {
    cudnn_backend::native_graph_call(handle, call, plan->plan, plan->engine, variant_pack(buffers),
                                     graph, what);
  }

  Descriptor variant_pack(const SdpaBuffers& b) const {
    if (!b.q || !b.k || !b.v || !b.o || (plan->workspace > 0 && !b.workspace)) {
      throw Error(ErrorCode::kInvalidArgument,
                  what + ": a null buffer (Q, K, V, O or the workspace)");
    }
    std::vector<int64_t> uids = {kQ, kK, kV, kO, kScale};
    std::vector<void*> ptrs = {const_cast<void*>(b.q), const_cast<void*>(b.k),
                               const_cast<void*>(b.v), b.o, const_cast<float*>(&scale)};
    if (dims.causal) uids.push_back(kNegInf), ptrs.push_back(const_cast<float*>(&neg_inf));
    return cudnn_backend::variant_pack(uids, ptrs, b.workspace);
  }
};

namespace {

void check_dims(const SdpaDims& d, const std::string& what) {
  const auto bad = [&](const std::string& why) {
    throw Error(ErrorCode::kInvalidArgument, what + ": " + why);
  };
  if (d.batch < 1 || d.q_heads < 1 || d.kv_heads < 1 || d.q_len < 1 || d.head_dim < 1) {
    bad("batch, heads, query length and head size must be positive");
  }
  if (d.q_heads % d.kv_heads != 0) bad("the key/value heads do not divide the query heads");
  for (const auto* s : {&d.q_strides, &d.k_strides, &d.v_strides, &d.o_strides}) {
    if ((*s)[3] != 1) bad("the head dimension must be contiguous (stride 1)");
  }
  const auto unsupported = [&](const std::string& why) {
    throw Error(ErrorCode::kUnsupported, what + ": " + why + " (not through cuDNN)");
  };
  if (d.dtype != DType::kF16 && d.dtype != DType::kBF16)
    unsupported("cuDNN's fused attention takes f16 or bf16");
  if (d.kv_len < 1) unsupported("no keys");
  // cuDNN 9.18's release notes warn against a causal mask on one query row with grouped heads.
  if (d.causal && d.q_len == 1 && d.q_heads != d.kv_heads)
    unsupported("a causal mask on one query with grouped heads");
  // 16-byte rows: cuDNN's attention engines load whole vectors of the head dimension.
  if (d.head_dim % 8 != 0 || d.head_dim > 256)
    unsupported("the head size must be a multiple of 8, at most 256");
  for (const auto* s : {&d.q_strides, &d.k_strides, &d.v_strides, &d.o_strides}) {
    for (int i = 0; i < 3; ++i) {
      if ((*s)[static_cast<size_t>(i)] % 8 != 0) unsupported("strides must keep 16-byte alignment");
    }
  }
}

// The attention graph of `dims` and its plan: among those that build, in the heuristics' order,
// the first with the native CUDA graph note, else the first.
std::shared_ptr<const cudnn_backend::BuiltPlan> build_plan(cudnnHandle_t h, const SdpaDims& dims) {
  const cudnnDataType_t io = dims.dtype == DType::kBF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
  cudnn_backend::OpGraphBuilder gb(kFirstVirtual);
  const int64_t b = dims.batch, hq = dims.q_heads, hk = dims.kv_heads, sq = dims.q_len,
                skv = dims.kv_len, d = dims.head_dim;
  const auto& ks = dims.k_strides;
  const Descriptor& q = gb.tensor(kQ, {b, hq, sq, d}, as_vector(dims.q_strides), io, false);
  // K^T: K's memory read as [B, Hkv, D, Skv].
  const Descriptor& kt = gb.tensor(kK, {b, hk, d, skv}, {ks[0], ks[1], ks[3], ks[2]}, io, false);
  const Descriptor& v = gb.tensor(kV, {b, hk, skv, d}, as_vector(dims.v_strides), io, false);
  const Descriptor& o = gb.tensor(kO, {b, hq, sq, d}, as_vector(dims.o_strides), io, false);
  const Descriptor& scale =
      gb.tensor(kScale, {1, 1, 1, 1}, {1, 1, 1, 1}, CUDNN_DATA_FLOAT, false, true);
  const std::vector<int64_t> scores = {b, hq, sq, skv}, rows = {b, hq, sq, 1};

  const Descriptor& s0 = gb.virtual_like(scores);
  gb.matmul(q, kt, s0);
  const Descriptor& s1 = gb.virtual_like(scores);
  gb.pointwise(CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, s0, &scale, s1);
  const Descriptor* masked = &s1;
  if (dims.causal) {
    const Descriptor& neg_inf =
        gb.tensor(kNegInf, {1, 1, 1, 1}, {1, 1, 1, 1}, CUDNN_DATA_FLOAT, false, true);
    const Descriptor& row = gb.virtual_like(scores, CUDNN_DATA_INT32);
    gb.pointwise(CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, s1, nullptr, row, nullptr, 2);
    const Descriptor& col = gb.virtual_like(scores, CUDNN_DATA_INT32);
    gb.pointwise(CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, s1, nullptr, col, nullptr, 3);
    const Descriptor& keep = gb.virtual_like(scores, CUDNN_DATA_BOOLEAN);
    gb.pointwise(CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, row, &col, keep);
    const Descriptor& s2 = gb.virtual_like(scores);
    gb.pointwise(CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, s1, &neg_inf, s2, &keep);
    masked = &s2;
  }
  const Descriptor& max = gb.virtual_like(rows);
  gb.reduction(CUDNN_REDUCE_TENSOR_MAX, *masked, max);
  const Descriptor& centred = gb.virtual_like(scores);
  gb.pointwise(CUDNN_POINTWISE_SUB, CUDNN_DATA_FLOAT, *masked, &max, centred);
  const Descriptor& e = gb.virtual_like(scores);
  gb.pointwise(CUDNN_POINTWISE_EXP, CUDNN_DATA_FLOAT, centred, nullptr, e);
  const Descriptor& sum = gb.virtual_like(rows);
  gb.reduction(CUDNN_REDUCE_TENSOR_ADD, e, sum);
  // The softmax statistics max + log(sum), unused here: cuDNN's attention pattern includes
  // them and does not recognise a softmax without.
  const Descriptor& log_sum = gb.virtual_like(rows);
  gb.pointwise(CUDNN_POINTWISE_LOG, CUDNN_DATA_FLOAT, sum, nullptr, log_sum);
  const Descriptor& stats = gb.virtual_like(rows);
  gb.pointwise(CUDNN_POINTWISE_ADD, CUDNN_DATA_FLOAT, max, &log_sum, stats);
  // P in the I/O type: the engines take the second product's A operand as such.
  const Descriptor& p = gb.virtual_like(scores, io);
  gb.pointwise(CUDNN_POINTWISE_DIV, CUDNN_DATA_FLOAT, e, &sum, p);
  gb.matmul(p, v, o);

  const Descriptor graph = gb.finish(h);
  std::string last_error;
  std::vector<cudnn_backend::BuiltPlan> plans = cudnn_backend::buildable_plans(
      h, graph, kMaxWorkspaceBytes, kMaxPlansTried,
      [](const cudnn_backend::BuiltPlan& built) { return built.engine.native_graph; }, last_error);
  if (plans.empty()) throw Error(ErrorCode::kUnsupported, "no cuDNN engine (" + last_error + ")");
  return std::make_shared<const cudnn_backend::BuiltPlan>(
      std::move(plans.back().engine.native_graph ? plans.back() : plans.front()));
}

// Everything the plan depends on: the dims and every stride (the scale is bound at run time).
std::string plan_key(const SdpaDims& d) {
  std::string key = "sdpa " + d.to_string() + " strides";
  for (const auto* s : {&d.q_strides, &d.k_strides, &d.v_strides, &d.o_strides})
    for (int64_t v : *s) key += " " + std::to_string(v);
  return key;
}

}  // namespace

CudnnSdpa::CudnnSdpa(const CudnnHandle& handle, const SdpaDims& dims, std::string what)
    : handle_(handle), state_(std::make_unique<State>()) {
  State& s = *state_;
  s.dims = dims;
  s.what = std::move(what) + " [" + dims.to_string() + "]";
  check_dims(dims, s.what);
  s.scale = dims.scale;
  try {
    s.plan = handle.shared_plan<cudnn_backend::BuiltPlan>(
        plan_key(dims), [&] { return build_plan(static_cast<cudnnHandle_t>(handle.get()), dims); });
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kUnsupported) {
      throw Error(ErrorCode::kUnsupported,
                  s.what + ": cuDNN refused the attention graph: " + e.what());
    }
    throw Error(e.code(), s.what + ": " + e.what());
  }
}

CudnnSdpa::~CudnnSdpa() = default;

const SdpaDims& CudnnSdpa::dims() const {
  return state_->dims;
}
size_t CudnnSdpa::workspace_bytes() const {
  return static_cast<size_t>(state_->plan->workspace);
}
bool CudnnSdpa::native_graph() const {
  return state_->plan->engine.native_graph;
}

std::string CudnnSdpa::engine() const {
  const cudnn_backend::EngineInfo& e = state_->plan->engine;
  return "engine " + std::to_string(e.index) + (e.native_graph ? " (native CUDA graph)" : "");
}

void CudnnSdpa::run(const SdpaBuffers& buffers, cudaStream_t stream) const {
  cudnn_backend::execute(static_cast<cudnnHandle_t>(handle_.get()), state_->plan->plan,
                         state_->variant_pack(buffers), stream, state_->what);
}

void CudnnSdpa::populate(const SdpaBuffers& buffers, cudaGraph_t graph) const {
  state_->native_graph_call(static_cast<cudnnHandle_t>(handle_.get()),
                            cudnn_backend::NativeGraphCall::kPopulate, buffers, graph);
}

void CudnnSdpa::update(const SdpaBuffers& buffers, cudaGraph_t graph) const {
  state_->native_graph_call(static_cast<cudnnHandle_t>(handle_.get()),
                            cudnn_backend::NativeGraphCall::kUpdate, buffers, graph);
}

}  // namespace gf::cuda

#else  // no cuDNN in this build: every entry refuses.

namespace gf::cuda {

struct CudnnSdpa::State {
  SdpaDims dims;
};

size_t cudnn_runtime_version() {
  return 0;
}

CudnnSdpa::CudnnSdpa(const CudnnHandle& handle, const SdpaDims& dims, std::string what)
    : handle_(handle) {
  throw Error(ErrorCode::kUnsupported,
              what + " [" + dims.to_string() + "]: this build has no cuDNN");
}
CudnnSdpa::~CudnnSdpa() = default;
const SdpaDims& CudnnSdpa::dims() const {
  return state_->dims;
}
size_t CudnnSdpa::workspace_bytes() const {
  return 0;
}
bool CudnnSdpa::native_graph() const {
  return false;
}
std::string CudnnSdpa::engine() const {
  return "none";
}
void CudnnSdpa::run(const SdpaBuffers&, cudaStream_t) const {}
void CudnnSdpa::populate(const SdpaBuffers&, cudaGraph_t) const {}
void CudnnSdpa::update(const SdpaBuffers&, cudaGraph_t) const {}

}  // namespace gf::cuda

#endif  // GF_HAVE_CUDNN
