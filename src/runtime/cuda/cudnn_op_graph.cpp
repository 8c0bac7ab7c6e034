#ifdef GF_HAVE_CUDNN

#include "runtime/cuda/cudnn_op_graph.h"

#include <utility>

#include <cuda_runtime_api.h>

#include "graphfuse/error.h"

namespace gf::cuda::cudnn_backend {

const Descriptor& OpGraphBuilder::tensor(int64_t uid, std::vector<int64_t> dims,
                                         std::vector<int64_t> strides, cudnnDataType_t type,
                                         bool is_virtual, bool by_value) {
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

const Descriptor& OpGraphBuilder::virtual_like(const std::vector<int64_t>& dims,
                                               cudnnDataType_t type) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size() - 1; i-- > 0;) strides[i] = strides[i + 1] * dims[i + 1];
  return tensor(next_virtual_++, dims, strides, type, true);
}

void OpGraphBuilder::matmul(const Descriptor& a, const Descriptor& b, const Descriptor& c) {
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

void OpGraphBuilder::pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t precision,
                               const Descriptor& x, const Descriptor* b, const Descriptor& y,
                               const Descriptor* t, int64_t axis) {
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

void OpGraphBuilder::reduction(cudnnReduceTensorOp_t mode, const Descriptor& x,
                               const Descriptor& y) {
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

Descriptor OpGraphBuilder::finish(cudnnHandle_t handle) {
  std::vector<cudnnBackendDescriptor_t> ops;
  for (const Descriptor& op : ops_) ops.push_back(op.get());
  Descriptor graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  graph.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle)
      .set_descs(CUDNN_ATTR_OPERATIONGRAPH_OPS, ops)
      .finalize("operation graph");
  return graph;
}

namespace {

// The engine configurations cuDNN's heuristics rank for `graph`, best first.
std::vector<Descriptor> ranked_configs(const Descriptor& graph, cudnnBackendHeurMode_t mode) {
  Descriptor heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  heur.set_desc(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph)
      .set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode)
      .finalize("engine heuristics");
  int64_t count = 0;
  check(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
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
  check(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, raw.data()),
        "cudnnBackendGetAttribute (engine heuristics' results)");
  configs.resize(static_cast<size_t>(got));
  return configs;
}

EngineInfo engine_info(const Descriptor& config) {
  EngineInfo info;
  Descriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t e = engine.get();
  int64_t n = 0;
  check(cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &e),
        "cudnnBackendGetAttribute (engine config's engine)");
  check(cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n,
                                 &info.index),
        "cudnnBackendGetAttribute (engine index)");
  std::vector<cudnnBackendBehaviorNote_t> notes(CUDNN_BEHAVIOR_NOTE_TYPE_COUNT);
  check(cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
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

std::vector<BuiltPlan> buildable_plans(cudnnHandle_t handle, const Descriptor& graph,
                                       int64_t max_workspace, size_t max_plans,
                                       const std::function<bool(const BuiltPlan&)>& enough,
                                       std::string& last_error) {
  last_error = "cuDNN's heuristics offered no engine";
  std::vector<BuiltPlan> plans;
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    for (const Descriptor& config : ranked_configs(graph, mode)) {
      if (plans.size() >= max_plans) return plans;
      try {
        BuiltPlan built{Descriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR), {}, 0};
        built.plan.set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle)
            .set_desc(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config)
            .finalize("execution plan");
        int64_t n = 0;
        check(cudnnBackendGetAttribute(built.plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                       CUDNN_TYPE_INT64, 1, &n, &built.workspace),
              "cudnnBackendGetAttribute (plan workspace)");
        if (built.workspace > max_workspace) {
          last_error = "every engine wanted more than " + std::to_string(max_workspace) +
                       " bytes of workspace";
          continue;
        }
        built.engine = engine_info(config);
        plans.push_back(std::move(built));
        if (enough && enough(plans.back())) return plans;
      } catch (const Error& e) {
        last_error = e.what();
      }
    }
    if (!plans.empty()) break;
  }
  return plans;
}

Descriptor variant_pack(const std::vector<int64_t>& uids, const std::vector<void*>& ptrs,
                        void* workspace) {
  Descriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  pack.set_ints(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, uids)
      .set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
           static_cast<int64_t>(ptrs.size()), ptrs.data())
      .set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace)
      .finalize("variant pack");
  return pack;
}

void execute(cudnnHandle_t handle, const Descriptor& plan, const Descriptor& pack,
             cudaStream_t stream, const std::string& what) {
  check(cudnnSetStream(handle, stream), "cudnnSetStream (" + what + ")");
  check(cudnnBackendExecute(handle, plan.get(), pack.get()), "cudnnBackendExecute (" + what + ")");
}

void native_graph_call(cudnnHandle_t handle, NativeGraphCall call, const Descriptor& plan,
                       const EngineInfo& engine, const Descriptor& pack, cudaGraph_t graph,
                       const std::string& what) {
  if (!engine.native_graph) {
    throw Error(ErrorCode::kUnsupported, what + ": the chosen engine " +
                                             std::to_string(engine.index) +
                                             " does not support cuDNN's native CUDA graph API");
  }
  if (call == NativeGraphCall::kPopulate) {
    check(cudnnBackendPopulateCudaGraph(handle, plan.get(), pack.get(), graph),
          "cudnnBackendPopulateCudaGraph (" + what + ")");
  } else {
    check(cudnnBackendUpdateCudaGraph(handle, plan.get(), pack.get(), graph),
          "cudnnBackendUpdateCudaGraph (" + what + ")");
  }
}

}  // namespace gf::cuda::cudnn_backend

#endif  // GF_HAVE_CUDNN
