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

#include "runtime/cuda/cudnn_backend.h"

namespace gf::cuda {

namespace {

using cudnn_backend::Descriptor;

// The tensors the caller binds, by unique id; the intermediates take ids from kFirstVirtual.
enum : int64_t { kQ = 1, kK, kV, kO, kScale, kNegInf, kFirstVirtual = 100 };

// The largest workspace an engine may ask for; a plan that wants more is skipped.
constexpr int64_t kMaxWorkspaceBytes = int64_t{256} << 20;

std::vector<int64_t> as_vector(const std::array<int64_t, 4>& a) {
  return {a[0], a[1], a[2], a[3]};
}

// Builds the operation graph: tensors first (each op refers to its tensors' descriptors), then
// the ops in dataflow order.
class GraphBuilder {
 public:
  const Descriptor& tensor(int64_t uid, std::vector<int64_t> dims, std::vector<int64_t> strides,
                           cudnnDataType_t type, bool is_virtual, bool by_value = false) {
    Descriptor t(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    t.set_data_type(CUDNN_ATTR_TENSOR_DATA_TYPE, type)
        .set_ints(CUDNN_ATTR_TENSOR_DIMENSIONS, dims)
        .set_ints(CUDNN_ATTR_TENSOR_STRIDES, strides)
        .set_int(CUDNN_ATTR_TENSOR_UNIQUE_ID, uid)
        .set_int(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, 16)
        .set_bool(CUDNN_ATTR_TENSOR_IS_VIRTUAL, is_virtual);
    if (by_value) t.set_bool(CUDNN_ATTR_TENSOR_IS_BY_VALUE, true);
    t.finalize("tensor " + std::to_string(uid));
    tensors_.push_back(std::make_unique<Descriptor>(std::move(t)));
    return *tensors_.back();
  }

  // A virtual tensor of these dims (f32 unless told), contiguous.
  const Descriptor& virtual_like(const std::vector<int64_t>& dims,
                                 cudnnDataType_t type = CUDNN_DATA_FLOAT) {
    std::vector<int64_t> strides(dims.size(), 1);
    for (size_t i = dims.size() - 1; i-- > 0;) strides[i] = strides[i + 1] * dims[i + 1];
    return tensor(next_virtual_++, dims, strides, type, true);
  }

  void matmul(const Descriptor& a, const Descriptor& b, const Descriptor& c) {
    Descriptor mm(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    mm.set_data_type(CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_DATA_FLOAT).finalize("matmul");
    Descriptor op(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    op.set_desc(CUDNN_ATTR_OPERATION_MATMUL_ADESC, a)
        .set_desc(CUDNN_ATTR_OPERATION_MATMUL_BDESC, b)
        .set_desc(CUDNN_ATTR_OPERATION_MATMUL_CDESC, c)
        .set_desc(CUDNN_ATTR_OPERATION_MATMUL_DESC, mm)
        .finalize("matmul operation");
    keep(std::move(mm));
    keep_op(std::move(op));
  }

  // y = mode(x, b) (b null for unary modes; t the condition of BINARY_SELECT).
  void pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t precision, const Descriptor& x,
                 const Descriptor* b, const Descriptor& y, const Descriptor* t = nullptr,
                 int64_t axis = -1) {
    Descriptor pw(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    pw.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode)
        .set_data_type(CUDNN_ATTR_POINTWISE_MATH_PREC, precision);
    if (axis >= 0) pw.set_int(CUDNN_ATTR_POINTWISE_AXIS, axis);
    pw.finalize("pointwise " + std::to_string(static_cast<int>(mode)));
    Descriptor op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw)
        .set_desc(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x)
        .set_desc(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
    if (b) op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b);
    if (t) op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_TDESC, *t);
    op.finalize("pointwise operation " + std::to_string(static_cast<int>(mode)));
    keep(std::move(pw));
    keep_op(std::move(op));
  }

  void reduction(cudnnReduceTensorOp_t mode, const Descriptor& x, const Descriptor& y) {
    Descriptor r(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    r.set(CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &mode)
        .set_data_type(CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_DATA_FLOAT)
        .finalize("reduction");
    Descriptor op(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
    op.set_desc(CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x)
        .set_desc(CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y)
        .set_desc(CUDNN_ATTR_OPERATION_REDUCTION_DESC, r)
        .finalize("reduction operation");
    keep(std::move(r));
    keep_op(std::move(op));
  }

  Descriptor finish(cudnnHandle_t handle) {
    std::vector<cudnnBackendDescriptor_t> ops;
    for (const Descriptor& op : ops_) ops.push_back(op.get());
    Descriptor graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    graph.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle)
        .set_descs(CUDNN_ATTR_OPERATIONGRAPH_OPS, ops)
        .finalize("operation graph");
    return graph;
  }

 private:
  void keep(Descriptor d) { others_.push_back(std::move(d)); }
  void keep_op(Descriptor d) { ops_.push_back(std::move(d)); }

  int64_t next_virtual_ = kFirstVirtual;
  std::vector<std::unique_ptr<Descriptor>> tensors_;  // stable addresses: ops hold references
  std::vector<Descriptor> others_, ops_;
};

// The engine configurations cuDNN's heuristics rank for `graph`, best first.
std::vector<Descriptor> ranked_configs(const Descriptor& graph, cudnnBackendHeurMode_t mode) {
  Descriptor heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  heur.set_desc(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph)
      .set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode)
      .finalize("engine heuristics");
  int64_t count = 0;
  cudnn_backend::check(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr),
                       "cudnnBackendGetAttribute (engine heuristics' result count)");
  std::vector<Descriptor> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    raw.push_back(configs.back().get());
  }
  if (count == 0) return configs;
  int64_t got = 0;
  cudnn_backend::check(
      cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, raw.data()),
      "cudnnBackendGetAttribute (engine heuristics' results)");
  configs.resize(static_cast<size_t>(got));
  return configs;
}

struct EngineInfo {
  int64_t index = -1;
  bool native_graph = false;
};

EngineInfo engine_info(const Descriptor& config) {
  EngineInfo info;
  Descriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t e = engine.get();
  int64_t n = 0;
  cudnn_backend::check(cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE,
                                                CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &e),
                       "cudnnBackendGetAttribute (engine config's engine)");
  cudnn_backend::check(cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64,
                                                1, &n, &info.index),
                       "cudnnBackendGetAttribute (engine index)");
  std::vector<cudnnBackendBehaviorNote_t> notes(CUDNN_BEHAVIOR_NOTE_TYPE_COUNT);
  cudnn_backend::check(
      cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                               static_cast<int64_t>(notes.size()), &n, notes.data()),
      "cudnnBackendGetAttribute (engine behaviour notes)");
  for (int64_t i = 0; i < n; ++i) {
    if (notes[static_cast<size_t>(i)] == CUDNN_BEHAVIOR_NOTE_SUPPORTS_CUDA_GRAPH_NATIVE_API) {
      info.native_graph = true;
    }
  }
  return info;
}

}  // namespace

size_t cudnn_runtime_version() {
  return cudnnGetVersion();
}

struct CudnnSdpa::State {
  SdpaDims dims;
  std::string what;  // "node 'x' (Attention): B=.. Hq=.." for errors
  Descriptor plan;
  EngineInfo engine;
  int64_t workspace = 0;
  float scale = 0;
  float neg_inf = -std::numeric_limits<float>::infinity();

  // A plan for the graph, trying the heuristics' configurations in order; among those that
  // build, the first with the native CUDA graph note wins, else the first.
  void choose_plan(cudnnHandle_t handle, const Descriptor& graph) {
    std::string last_error = "cuDNN's heuristics offered no engine";
    Descriptor first_plan;
    EngineInfo first_engine;
    int64_t first_workspace = 0;
    for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
      for (const Descriptor& config : ranked_configs(graph, mode)) {
        try {
          Descriptor p(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
          p.set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle)
              .set_desc(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config)
              .finalize("execution plan");
          int64_t ws = 0, n = 0;
          cudnn_backend::check(
              cudnnBackendGetAttribute(p.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                       CUDNN_TYPE_INT64, 1, &n, &ws),
              "cudnnBackendGetAttribute (plan workspace)");
          if (ws > kMaxWorkspaceBytes) continue;
          const EngineInfo info = engine_info(config);
          if (info.native_graph) {
            plan = std::move(p), engine = info, workspace = ws;
            return;
          }
          if (!first_plan) first_plan = std::move(p), first_engine = info, first_workspace = ws;
        } catch (const Error& e) {
          last_error = e.what();
        }
      }
      if (first_plan) break;
    }
    if (!first_plan)
      throw Error(ErrorCode::kUnsupported, what + ": no cuDNN engine (" + last_error + ")");
    plan = std::move(first_plan), engine = first_engine, workspace = first_workspace;
  }

  // cudnnBackendPopulateCudaGraph or cudnnBackendUpdateCudaGraph (the same signature).
  using GraphCall = cudnnStatus_t (*)(cudnnHandle_t, cudnnBackendDescriptor_t,
                                      cudnnBackendDescriptor_t, cudaGraph_t);
  void native_graph_call(cudnnHandle_t handle, GraphCall call, const char* name,
                         const SdpaBuffers& buffers, cudaGraph_t graph) const {
    if (!engine.native_graph) {
      throw Error(ErrorCode::kUnsupported, what + ": the chosen engine " +
                                               std::to_string(engine.index) +
                                               " does not support cuDNN's native CUDA graph API");
    }
    const Descriptor pack = variant_pack(buffers);
    cudnn_backend::check(call(handle, plan.get(), pack.get(), graph),
                         std::string(name) + " (" + what + ")");
  }

  Descriptor variant_pack(const SdpaBuffers& b) const {
    if (!b.q || !b.k || !b.v || !b.o || (workspace > 0 && !b.workspace)) {
      throw Error(ErrorCode::kInvalidArgument,
                  what + ": a null buffer (Q, K, V, O or the workspace)");
    }
    std::vector<int64_t> uids = {kQ, kK, kV, kO, kScale};
    std::vector<void*> ptrs = {const_cast<void*>(b.q), const_cast<void*>(b.k),
                               const_cast<void*>(b.v), b.o, const_cast<float*>(&scale)};
    if (dims.causal) uids.push_back(kNegInf), ptrs.push_back(const_cast<float*>(&neg_inf));
    Descriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    void* ws = b.workspace;
    pack.set_ints(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, uids)
        .set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
             static_cast<int64_t>(ptrs.size()), ptrs.data())
        .set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws)
        .finalize("variant pack");
    return pack;
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

}  // namespace

CudnnSdpa::CudnnSdpa(const CudnnHandle& handle, const SdpaDims& dims, std::string what)
    : handle_(handle), state_(std::make_unique<State>()) {
  State& s = *state_;
  s.dims = dims;
  s.what = std::move(what) + " [" + dims.to_string() + "]";
  check_dims(dims, s.what);
  s.scale = dims.scale;
  const cudnnHandle_t h = static_cast<cudnnHandle_t>(handle.get());
  const cudnnDataType_t io = dims.dtype == DType::kBF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
  try {
    GraphBuilder gb;
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
    s.choose_plan(h, graph);
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
  return static_cast<size_t>(state_->workspace);
}
bool CudnnSdpa::native_graph() const {
  return state_->engine.native_graph;
}

std::string CudnnSdpa::engine() const {
  return "engine " + std::to_string(state_->engine.index) +
         (state_->engine.native_graph ? " (native CUDA graph)" : "");
}

void CudnnSdpa::run(const SdpaBuffers& buffers, cudaStream_t stream) const {
  const cudnnHandle_t h = static_cast<cudnnHandle_t>(handle_.get());
  const Descriptor pack = state_->variant_pack(buffers);
  cudnn_backend::check(cudnnSetStream(h, stream), "cudnnSetStream (" + state_->what + ")");
  cudnn_backend::check(cudnnBackendExecute(h, state_->plan.get(), pack.get()),
                       "cudnnBackendExecute (" + state_->what + ")");
}

void CudnnSdpa::populate(const SdpaBuffers& buffers, cudaGraph_t graph) const {
  state_->native_graph_call(static_cast<cudnnHandle_t>(handle_.get()),
                            &cudnnBackendPopulateCudaGraph, "cudnnBackendPopulateCudaGraph",
                            buffers, graph);
}

void CudnnSdpa::update(const SdpaBuffers& buffers, cudaGraph_t graph) const {
  state_->native_graph_call(static_cast<cudnnHandle_t>(handle_.get()), &cudnnBackendUpdateCudaGraph,
                            "cudnnBackendUpdateCudaGraph", buffers, graph);
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
