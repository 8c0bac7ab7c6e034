// emit_cuda_kernel: plans a FusedKernel's schedule (vector width, index width, persistent rows),
// writes its header and the helpers the schedules share. The loops themselves are in
// cuda_pointwise.cpp and cuda_rows.cpp. Every name the generated code introduces itself starts
// with gf_, so it cannot clash with the expr writer's b<k>/o<d>/i<d>/row<r>/t<id>.
#include "codegen/cuda/cuda_emitter.h"

#include <algorithm>
#include <map>

#include "codegen/cuda/cuda_kernel_writer.h"
#include "codegen/cuda/cuda_target.h"
#include "graphfuse/error.h"

namespace gf::codegen {

using fusion::ExprId;
using fusion::ExprKind;
using fusion::Store;

int64_t dims_product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

namespace {

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace

CudaKernelWriter::CudaKernelWriter(const fusion::FusedKernel& k, const Graph& g,
                                   const CudaEmitOptions& o)
    : k_(k),
      g_(g),
      opts_(o),
      target_(cuda_target()),
      exprs_(k, g, target_, o.round_16bit_intermediates),
      outer_(dims_product(k.outer_dims)),
      inner_(dims_product(k.inner_dims)) {}

std::set<ExprId> CudaKernelWriter::closure(const std::vector<ExprId>& roots,
                                           bool stop_at_sources) const {
  std::set<ExprId> seen;
  std::vector<ExprId> stack(roots.begin(), roots.end());
  while (!stack.empty()) {
    const ExprId id = stack.back();
    stack.pop_back();
    if (!seen.insert(id).second || (stop_at_sources && exprs_.has_source(id))) continue;
    for (ExprId a : exprs_.expr(id).args) stack.push_back(a);
  }
  return seen;
}

bool CudaKernelWriter::buffer_loaded_and_stored() const {
  std::set<int> stored;
  for (const Store& s : k_.stores) stored.insert(s.buffer);
  return std::any_of(k_.exprs.begin(), k_.exprs.end(), [&](const fusion::Expr& e) {
    return e.kind == ExprKind::kLoad && stored.count(e.buffer);
  });
}

bool CudaKernelWriter::pointwise_plan_ok(const VectorPlan& p) const {
  return std::all_of(p.stores.begin(), p.stores.end(),
                     [](VectorAccess a) { return a == VectorAccess::kContiguous; });
}

bool CudaKernelWriter::row_plan_ok(const VectorPlan& p) const {
  if (inner_ % p.width != 0) return false;
  for (size_t s = 0; s < k_.stores.size(); ++s) {
    if (k_.stores[s].per_inner && p.stores[s] != VectorAccess::kContiguous) return false;
  }
  for (size_t id = 0; id < k_.exprs.size(); ++id) {
    const auto e = static_cast<ExprId>(id);
    if (k_.exprs[id].kind == ExprKind::kLoad && exprs_.uses_inner(e) &&
        p.loads[id] == VectorAccess::kScattered)
      return false;
  }
  return true;
}

VectorPlan CudaKernelWriter::widest_plan(ExprKind kind, const std::vector<int64_t>& dims,
                                         bool (CudaKernelWriter::*ok)(const VectorPlan&)
                                             const) const {
  size_t smallest = 16;
  for (const fusion::KernelBuffer& b : k_.buffers)
    smallest = std::min(smallest, dtype_size(b.dtype));
  for (int w = static_cast<int>(16 / smallest); w >= 2; w /= 2) {
    VectorPlan p = plan_vector_access(k_, kind, dims, w);
    if ((this->*ok)(p)) return p;
  }
  return plan_vector_access(k_, kind, dims, 1);
}

void CudaKernelWriter::plan() {
  if (opts_.sm_count < 1) {
    throw Error(ErrorCode::kInvalidArgument, "CUDA code generation of kernel '" + k_.name +
                                                 "': sm_count " + std::to_string(opts_.sm_count) +
                                                 " is not positive");
  }
  exprs_.set_index32(opts_.index32 && fits_32bit_indexing(k_));
  const bool aliasing = buffer_loaded_and_stored();  // keep the order of reads and writes
  const bool vectorize = opts_.vectorize && !aliasing;
  if (k_.inner_dims.empty() && k_.reductions.empty()) {
    schedule_ = CudaSchedule::kPointwise;
    vec_ = vectorize ? widest_plan(ExprKind::kOuterIndex, k_.outer_dims,
                                   &CudaKernelWriter::pointwise_plan_ok)
                     : plan_vector_access(k_, ExprKind::kOuterIndex, k_.outer_dims, 1);
    return;
  }
  schedule_ =
      inner_ <= kWarpPerRowMaxInner ? CudaSchedule::kWarpPerRow : CudaSchedule::kBlockPerRow;
  vec_ = vectorize && inner_ > 0
             ? widest_plan(ExprKind::kInnerIndex, k_.inner_dims, &CudaKernelWriter::row_plan_ok)
             : plan_vector_access(k_, ExprKind::kInnerIndex, k_.inner_dims, 1);
  std::vector<ExprId> values;
  for (const fusion::RowReduction& r : k_.reductions) values.push_back(r.value);
  for (ExprId id : closure(values)) {
    if (exprs_.expr(id).kind == ExprKind::kLoad && exprs_.uses_inner(id))
      cached_loads_.push_back(id);
  }
  const int64_t row_threads =
      schedule_ == CudaSchedule::kWarpPerRow ? kWarpSize : kCudaBlockThreads;
  chunks_ = inner_ / vec_.width;
  chunks_per_thread_ = ceil_div(chunks_, row_threads);
  persistent_ = !aliasing && inner_ > 0 && !cached_loads_.empty() &&
                static_cast<int64_t>(cached_loads_.size()) * chunks_per_thread_ * vec_.width <=
                    kMaxRowValuesPerThread;
  if (!persistent_) {
    vec_ = plan_vector_access(k_, ExprKind::kInnerIndex, k_.inner_dims, 1);
    return;
  }
  kept_values_ = plan_kept_values();
  min_blocks_per_sm_ = plan_min_blocks_per_sm();
}

uint32_t CudaKernelWriter::alignment() const {
  std::vector<bool> vector_access(k_.buffers.size(), false);
  if (vec_.width > 1) {
    const bool rows = schedule_ != CudaSchedule::kPointwise;
    for (size_t id = 0; id < k_.exprs.size(); ++id) {
      const fusion::Expr& e = k_.exprs[id];
      if (e.kind == ExprKind::kLoad && vec_.loads[id] == VectorAccess::kContiguous &&
          (!rows || exprs_.uses_inner(static_cast<ExprId>(id))))
        vector_access[static_cast<size_t>(e.buffer)] = true;
    }
    for (size_t s = 0; s < k_.stores.size(); ++s) {
      if (vec_.stores[s] == VectorAccess::kContiguous && (!rows || k_.stores[s].per_inner))
        vector_access[static_cast<size_t>(k_.stores[s].buffer)] = true;
    }
  }
  size_t align = 1;
  for (size_t b = 0; b < k_.buffers.size(); ++b) {
    const size_t size = dtype_size(k_.buffers[b].dtype);
    const size_t want =
        vector_access[b] ? std::min<size_t>(16, size * static_cast<size_t>(vec_.width)) : size;
    align = std::max(align, want);
  }
  return static_cast<uint32_t>(align);
}

LaunchConfig CudaKernelWriter::launch_config() const {
  const int64_t max_blocks = static_cast<int64_t>(opts_.sm_count) * kCudaBlocksPerSm;
  int64_t blocks = 0;
  switch (schedule_) {
    case CudaSchedule::kPointwise:
      blocks = ceil_div(outer_ / vec_.width, kCudaBlockThreads);
      if (outer_ > 0) blocks = std::max<int64_t>(blocks, 1);  // the scalar tail
      break;
    case CudaSchedule::kWarpPerRow:
      blocks = ceil_div(outer_, kWarpsPerBlock);
      break;
    case CudaSchedule::kBlockPerRow:
      blocks = outer_;
      break;
  }
  LaunchConfig c;
  c.grid = static_cast<uint32_t>(std::min(blocks, max_blocks));
  c.block = kCudaBlockThreads;
  return c;
}

void CudaKernelWriter::write_header() {
  std::istringstream comment(k_.comment);
  for (std::string line; std::getline(comment, line);) out_ << "// " << comment_safe(line) << "\n";
  out_ << "// Generated by graphfuse (CUDA code generator): kernel " << k_.name << ", schedule "
       << cuda_schedule_name(schedule_) << (persistent_ ? " (row in registers)" : "") << ", "
       << kCudaBlockThreads << " threads per block, vector width " << vec_.width << ", "
       << (exprs_.index32() ? 32 : 64) << "-bit indices.\n"
       << "// outer " << dims_string(k_.outer_dims) << ", inner " << dims_string(k_.inner_dims)
       << ", " << k_.reductions.size() << " reduction(s), " << k_.stores.size() << " store(s).\n\n"
       << cuda_prelude() << "\n"
       << "extern \"C\" __global__ void __launch_bounds__(" << kCudaBlockThreads
       << (min_blocks_per_sm_ > 1 ? ", " + std::to_string(min_blocks_per_sm_) : std::string())
       << ") " << k_.name << "(void* const* buffers) {\n"
       << "  gf_grid_dependency_sync();\n";
  for (size_t i = 0; i < k_.buffers.size(); ++i) {
    const fusion::KernelBuffer& b = k_.buffers[i];
    const std::string type = (b.is_output ? "" : "const ") + storage_c_type(b.dtype);
    out_ << "  " << type << "* b" << i << " = (" << type << "*)buffers[" << i << "];  // "
         << comment_safe(b.name) << ": " << dtype_name(b.dtype) << dims_string(b.dims)
         << (b.is_output ? " (output)" : "") << "\n";
  }
}

void CudaKernelWriter::unravel(const std::string& flat, const std::vector<int64_t>& dims,
                               const std::string& prefix, const std::string& indent,
                               size_t first_axis) {
  if (dims.empty()) return;
  const std::string type = exprs_.index_c_type();
  const std::string value = "(" + type + ")(" + flat + ")";
  if (dims.size() == 1) {
    out_ << indent << "const " << type << " " << prefix << first_axis << " = " << value << ";\n";
    return;
  }
  const std::string rest = "gf_rest_" + prefix + std::to_string(first_axis);
  out_ << indent << type << " " << rest << " = " << value << ";\n";
  for (size_t d = dims.size(); d-- > 1;) {
    out_ << indent << "const " << type << " " << prefix << first_axis + d << " = " << rest << " % "
         << dims[d] << "; " << rest << " /= " << dims[d] << ";\n";
  }
  out_ << indent << "const " << type << " " << prefix << first_axis << " = " << rest << ";\n";
}

void CudaKernelWriter::unravel_run_point(const VectorPlan& p, const std::vector<int64_t>& dims,
                                         const std::string& base, const std::string& lane,
                                         const std::string& prefix, const std::string& indent) {
  const auto k = static_cast<size_t>(p.first_varying_dim);
  if (k == 0) {
    unravel("(" + base + ") + " + lane, dims, prefix, indent);
    return;
  }
  // Only the dims from k on vary inside a run: the others come from the run's first point.
  const std::vector<int64_t> head(dims.begin(), dims.begin() + static_cast<long>(k));
  const std::vector<int64_t> tail(dims.begin() + static_cast<long>(k), dims.end());
  const std::string span = std::to_string(dims_product(tail));
  unravel("(" + base + ") / " + span, head, prefix, indent);
  unravel("(" + base + ") % " + span + " + " + lane, tail, prefix, indent, k);
}

void CudaKernelWriter::write_run(const VectorPlan& p, const std::vector<int64_t>& dims,
                                 bool inner_level, const std::string& base,
                                 const std::vector<size_t>& stores, size_t rows_ready,
                                 const std::set<ExprId>& cached, const std::string& indent) {
  const int w = p.width;
  const std::string prefix = inner_level ? "i" : "o", in = indent + "  ";
  std::vector<ExprId> roots;
  for (size_t s : stores) roots.insert(roots.end(), {k_.stores[s].index, k_.stores[s].value});
  std::vector<ExprId> vector_loads;
  std::vector<size_t> vector_stores;
  if (w > 1) {
    for (ExprId id : closure(roots)) {
      const fusion::Expr& e = exprs_.expr(id);
      if (e.kind == ExprKind::kLoad && !cached.count(id) && exprs_.uses_inner(id) == inner_level &&
          p.loads[static_cast<size_t>(id)] != VectorAccess::kScattered)
        vector_loads.push_back(id);
    }
    for (size_t s : stores)
      if (p.stores[s] == VectorAccess::kContiguous) vector_stores.push_back(s);
  }
  auto type_of = [&](int buffer) {
    return storage_c_type(k_.buffers[static_cast<size_t>(buffer)].dtype);
  };
  out_ << indent << "{\n";
  if (!vector_loads.empty() || !vector_stores.empty()) {
    // The addresses at the run's first point.
    std::vector<ExprId> index_roots;
    for (ExprId id : vector_loads) {
      if (hoisted_loads_.count(id)) continue;
      out_ << in << "const " << type_of(exprs_.expr(id).buffer) << "* gf_p" << id << ";\n";
      index_roots.push_back(exprs_.expr(id).args[0]);
    }
    for (size_t s : vector_stores) {
      out_ << in << type_of(k_.stores[s].buffer) << "* gf_q" << s << ";\n";
      index_roots.push_back(k_.stores[s].index);
    }
    out_ << in << "{\n";
    unravel_run_point(p, dims, base, "0", prefix, in + "  ");
    std::set<ExprId> done;
    exprs_.emit(out_, index_roots, inner_level, done, in + "  ", rows_ready);
    for (ExprId id : vector_loads) {
      if (hoisted_loads_.count(id)) continue;
      out_ << in << "  gf_p" << id << " = b" << exprs_.expr(id).buffer << " + "
           << exprs_.index_ref(exprs_.expr(id).args[0]) << ";\n";
    }
    for (size_t s : vector_stores) {
      out_ << in << "  gf_q" << s << " = b" << k_.stores[s].buffer << " + "
           << exprs_.index_ref(k_.stores[s].index) << ";\n";
    }
    out_ << in << "}\n";
  }
  for (ExprId id : vector_loads) {
    const std::string t = type_of(exprs_.expr(id).buffer);
    if (hoisted_loads_.count(id)) {
      exprs_.set_load_source(id, "gf_u" + std::to_string(id));  // read ahead of the loop
    } else if (p.loads[static_cast<size_t>(id)] == VectorAccess::kUniform) {
      out_ << in << "const " << t << " gf_u" << id << " = *gf_p" << id << ";\n";
      exprs_.set_load_source(id, "gf_u" + std::to_string(id));
    } else {
      out_ << in << t << " gf_l" << id << "[" << w << "];\n"
           << in << "gf_load_vec<" << t << ", " << w << ">(gf_l" << id << ", gf_p" << id << ");\n";
      exprs_.set_load_source(id, "gf_l" + std::to_string(id) + "[gf_j]");
    }
  }
  // Vector stores of f16/bf16 gather floats and convert them in pairs (gf_store_vec_pairs
  // in the prelude), bit for bit what converting each would give.
  auto buffer_dtype = [&](size_t s) { return k_.buffers[static_cast<size_t>(k_.stores[s].buffer)].dtype; };
  auto paired = [&](size_t s) {
    return w % 2 == 0 && (buffer_dtype(s) == DType::kF16 || buffer_dtype(s) == DType::kBF16);
  };
  const std::vector<ExprId> packed = write_packed_ops(p, inner_level, roots, vector_loads, in);
  // A store of a packed result stores its pairs as they are.
  auto packed_value = [&](size_t s) {
    const ExprId v = k_.stores[s].value;
    return std::find(packed.begin(), packed.end(), v) != packed.end() &&
           exprs_.expr(v).dtype == buffer_dtype(s);
  };
  for (size_t s : vector_stores)
    if (!packed_value(s))
      out_ << in << (paired(s) ? "float" : type_of(k_.stores[s].buffer)) << " gf_s" << s << "[" << w
           << "];\n";
  const std::vector<ExprId> rounded =
      write_paired_roundings(p, dims, inner_level, base, roots, rows_ready, in);
  out_ << in << "#pragma unroll\n" << in << "for (int gf_j = 0; gf_j < " << w << "; ++gf_j) {\n";
  unravel_run_point(p, dims, base, "gf_j", prefix, in + "  ");
  std::set<ExprId> done;
  exprs_.emit(out_, roots, inner_level, done, in + "  ", rows_ready);
  for (size_t s : stores) {
    const bool vector =
        std::find(vector_stores.begin(), vector_stores.end(), s) != vector_stores.end();
    if (vector && packed_value(s)) continue;
    const fusion::Store& st = k_.stores[s];
    const std::string value = !vector     ? ""
                              : paired(s) ? exprs_.as_type(st.value, buffer_dtype(s))
                                          : exprs_.store_value(st);
    out_ << in << "  "
         << (vector ? "gf_s" + std::to_string(s) + "[gf_j] = " + value + ";" : exprs_.store_statement(st))
         << "\n";
  }
  out_ << in << "}\n";
  for (size_t s : vector_stores) {
    if (packed_value(s)) {
      out_ << in << "gf_store_vec<uint32_t, " << w / 2 << ">(reinterpret_cast<uint32_t*>(gf_q" << s
           << "), gf_h" << k_.stores[s].value << ");\n";
      continue;
    }
    if (!paired(s)) {
      out_ << in << "gf_store_vec<" << type_of(k_.stores[s].buffer) << ", " << w << ">(gf_q" << s
           << ", gf_s" << s << ");\n";
      continue;
    }
    const char* pack = buffer_dtype(s) == DType::kF16             ? "gf_pack_f16"
                       : exprs_.stores_exact_bf16(k_.stores[s]) ? "gf_pack_bf16_exact"
                                                                : "gf_pack_bf16";
    out_ << in << "gf_store_vec_pairs<" << w << ", " << pack << ">(gf_q" << s << ", gf_s" << s << ");\n";
  }
  out_ << indent << "}\n";
  for (ExprId id : vector_loads) exprs_.clear_load_source(id);
  for (ExprId id : rounded) exprs_.clear_value_source(id);
  for (ExprId id : packed) exprs_.clear_value_source(id);
}

std::vector<ExprId> CudaKernelWriter::write_paired_roundings(
    const VectorPlan& p, const std::vector<int64_t>& dims, bool inner_level,
    const std::string& base, const std::vector<ExprId>& roots, size_t rows_ready,
    const std::string& indent) {
  const int w = p.width;
  if (w < 2 || w % 2 != 0) return {};
  // Per expr, how many rounded results lie on its longest path from the run's inputs (itself
  // included): wave k computes and rounds those whose count is k. Args have smaller ids.
  std::map<ExprId, int> depth;
  std::map<int, std::vector<ExprId>> waves;
  for (ExprId id : closure(roots, true)) {  // ascending ids: args first
    if (exprs_.has_source(id) || exprs_.uses_inner(id) != inner_level) {
      depth[id] = 0;
      continue;
    }
    int d = 0;
    for (ExprId a : exprs_.expr(id).args) d = std::max(d, depth[a]);
    if (exprs_.rounds_where_computed(id)) waves[++d].push_back(id);
    depth[id] = d;
  }
  const std::string prefix = inner_level ? "i" : "o", in = indent + "  ";
  std::vector<ExprId> rounded;
  for (const auto& [wave, ids] : waves) {
    for (ExprId id : ids) {
      exprs_.set_unrounded(id);
      out_ << indent << "float gf_r" << id << "[" << w << "];\n";
    }
    out_ << indent << "#pragma unroll\n"
         << indent << "for (int gf_j = 0; gf_j < " << w << "; ++gf_j) {\n";
    unravel_run_point(p, dims, base, "gf_j", prefix, in);
    std::set<ExprId> done;
    exprs_.emit(out_, ids, inner_level, done, in, rows_ready);
    for (ExprId id : ids)
      out_ << in << "gf_r" << id << "[gf_j] = " << KernelExprWriter::tmp(id) << ";\n";
    out_ << indent << "}\n";
    exprs_.clear_unrounded();
    for (ExprId id : ids) {
      const bool f16 = exprs_.expr(id).dtype == DType::kF16;
      out_ << indent << (f16 ? "gf_round_f16_pairs<" : "gf_round_bf16_pairs<") << w << ">(gf_r"
           << id << ");\n";
      exprs_.set_value_source(id, "gf_r" + std::to_string(id) + "[gf_j]");
      rounded.push_back(id);
    }
  }
  return rounded;
}

CudaKernelSource CudaKernelWriter::write() {
  plan();
  CudaKernelSource result;
  result.name = k_.name;
  result.schedule = schedule_;
  result.launch = launch_config();
  result.vector_width = vec_.width;
  result.index32 = exprs_.index32();
  result.persistent_rows = persistent_;
  result.alignment = alignment();
  result.waits_for_prior_grids = true;  // write_header() syncs first
  write_header();
  if (schedule_ == CudaSchedule::kPointwise) {
    write_pointwise();
  } else {
    write_rows();
  }
  out_ << "}\n";
  result.source = out_.str();
  return result;
}

std::string_view cuda_schedule_name(CudaSchedule s) {
  switch (s) {
    case CudaSchedule::kPointwise:
      return "pointwise";
    case CudaSchedule::kWarpPerRow:
      return "warp-per-row";
    case CudaSchedule::kBlockPerRow:
      return "block-per-row";
  }
  return "?";
}

CudaKernelSource emit_cuda_kernel(const fusion::FusedKernel& kernel, const Graph& graph,
                                  const CudaEmitOptions& options) {
  return CudaKernelWriter(kernel, graph, options).write();
}

}  // namespace gf::codegen
