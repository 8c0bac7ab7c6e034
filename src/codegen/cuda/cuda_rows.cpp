// The row schedules (a warp or a block per outer point): persistent rows held in registers, or
// looped rows that read the row once per reduction and once for the stores.
#include <algorithm>
#include <set>

#include "codegen/cuda/cuda_kernel_writer.h"

namespace gf::codegen {

using fusion::ExprId;
using fusion::Store;

namespace {
const std::string kRowIndent = "    ";
}  // namespace

void CudaKernelWriter::write_row_setup(bool warp_per_row) {
  out_ << "  const int gf_lane = threadIdx.x % " << kWarpSize << ";\n";
  if (warp_per_row) {
    out_ << "  const int gf_rt = gf_lane;  // this thread's place in its row\n"
         << "  const int gf_row_threads = " << kWarpSize << ";\n"
         << "  const int64_t gf_first = (int64_t)blockIdx.x * " << kWarpsPerBlock
         << " + threadIdx.x / " << kWarpSize << ";\n"
         << "  const int64_t gf_stride = (int64_t)gridDim.x * " << kWarpsPerBlock << ";\n";
    return;
  }
  out_ << "  const int gf_warp = threadIdx.x / " << kWarpSize << ";\n"
       << "  const int gf_rt = threadIdx.x;  // this thread's place in its row\n"
       << "  const int gf_row_threads = " << kCudaBlockThreads << ";\n"
       << "  const int64_t gf_first = blockIdx.x;\n"
       << "  const int64_t gf_stride = gridDim.x;\n";
  for (size_t r = 0; r < k_.reductions.size(); ++r) {
    const std::string t = compute_c_type(k_.reductions[r].accumulate);
    out_ << "  __shared__ " << t << " gf_part" << r << "[" << kWarpsPerBlock << "];\n"
         << "  __shared__ " << t << " gf_row" << r << ";\n";
  }
}

void CudaKernelWriter::write_warp_butterfly(size_t r, const std::string& acc, int first_mask,
                                            const std::string& indent) {
  out_ << indent << "for (int gf_m = " << first_mask << "; gf_m > 0; gf_m >>= 1) " << acc << " = "
       << exprs_.reduction_combine(r, acc, "gf_shfl_xor(" + acc + ", gf_m)") << ";\n";
}

void CudaKernelWriter::write_row_combine(size_t r, const std::string& acc, bool warp_per_row,
                                         const std::string& in) {
  write_warp_butterfly(r, acc, kWarpSize / 2, in);
  if (!warp_per_row) {
    // Across the block's warps: one partial per warp in shared memory, combined by warp 0. The
    // second barrier publishes the row; the next row's writes come after this row's reads.
    const std::string part = "gf_part" + std::to_string(r), total = "gf_row" + std::to_string(r);
    out_ << in << "if (gf_lane == 0) " << part << "[gf_warp] = " << acc << ";\n"
         << in << "__syncthreads();\n"
         << in << "if (gf_warp == 0) {\n"
         << in << "  " << acc << " = gf_lane < " << kWarpsPerBlock << " ? " << part
         << "[gf_lane] : " << exprs_.reduction_identity(r) << ";\n";
    write_warp_butterfly(r, acc, kWarpsPerBlock / 2, in + "  ");
    out_ << in << "  if (gf_lane == 0) " << total << " = " << acc << ";\n"
         << in << "}\n"
         << in << "__syncthreads();\n"
         << in << acc << " = " << total << ";\n";
  }
  out_ << in << "const " << compute_c_type(k_.reductions[r].accumulate) << " row" << r << " = "
       << acc << ";\n";
}

void CudaKernelWriter::open_inner_loop(const std::string& indent) {
  out_ << indent << "for (int64_t gf_i = gf_rt; gf_i < " << inner_
       << "; gf_i += gf_row_threads) {\n";
  unravel("gf_i", k_.inner_dims, "i", indent + "  ");
}

void CudaKernelWriter::write_looped_reduction(size_t r, bool warp_per_row,
                                              std::set<ExprId>& row_done) {
  const fusion::RowReduction& red = k_.reductions[r];
  const std::string acc = "gf_acc" + std::to_string(r), in = kRowIndent;
  out_ << in << "// reduction " << r << "\n";
  exprs_.emit(out_, {red.value}, false, row_done, in, r);
  out_ << in << compute_c_type(red.accumulate) << " " << acc << " = "
       << exprs_.reduction_identity(r) << ";\n";
  open_inner_loop(in);
  std::set<ExprId> inner_done;
  exprs_.emit(out_, {red.value}, true, inner_done, in + "  ", r);
  out_ << in << "  " << acc << " = "
       << exprs_.reduction_combine(r, acc, exprs_.as_type(red.value, red.accumulate)) << ";\n"
       << in << "}\n";
  write_row_combine(r, acc, warp_per_row, in);
}

void CudaKernelWriter::write_per_outer_stores(std::set<ExprId>& row_done, const std::string& in) {
  bool any = false;
  for (const Store& s : k_.stores) any = any || !s.per_inner;
  if (!any) return;
  // One thread per row; what only these stores read is computed by it alone.
  out_ << in << "if (gf_rt == 0) {\n";
  std::set<ExprId> scoped = row_done;
  for (const Store& s : k_.stores) {
    if (s.per_inner) continue;
    exprs_.emit(out_, {s.index, s.value}, false, scoped, in + "  ", k_.reductions.size());
    out_ << in << "  " << exprs_.store_statement(s) << "\n";
  }
  out_ << in << "}\n";
}

void CudaKernelWriter::write_looped_stores(std::set<ExprId>& row_done) {
  const std::string in = kRowIndent;
  std::vector<ExprId> roots;
  for (const Store& s : k_.stores)
    if (s.per_inner) roots.insert(roots.end(), {s.index, s.value});
  if (roots.empty()) return;
  exprs_.emit(out_, roots, false, row_done, in, k_.reductions.size());
  open_inner_loop(in);
  std::set<ExprId> inner_done;
  exprs_.emit(out_, roots, true, inner_done, in + "  ", k_.reductions.size());
  for (const Store& s : k_.stores)
    if (s.per_inner) out_ << in << "  " << exprs_.store_statement(s) << "\n";
  out_ << in << "}\n";
}

void CudaKernelWriter::open_chunks(const std::string& in) {
  const int64_t row_threads =
      schedule_ == CudaSchedule::kWarpPerRow ? kWarpSize : kCudaBlockThreads;
  // Fully unrolled with constant bounds, so the row's arrays stay in registers.
  out_ << in << "#pragma unroll\n"
       << in << "for (int gf_k = 0; gf_k < " << chunks_per_thread_ << "; ++gf_k) {\n"
       << in << "  const int gf_ch = gf_k * " << row_threads << " + gf_rt;\n"
       << in << "  if ("
       << (chunks_ % row_threads == 0 ? "true" : "gf_ch < " + std::to_string(chunks_)) << ") {\n";
}

void CudaKernelWriter::close_chunks(const std::string& in) {
  out_ << in << "  }\n" << in << "}\n";
}

std::set<ExprId> CudaKernelWriter::per_element_reach(const std::vector<ExprId>& roots,
                                                     const std::set<ExprId>& sources) const {
  std::set<ExprId> seen;
  std::vector<ExprId> stack(roots.begin(), roots.end());
  while (!stack.empty()) {
    const ExprId id = stack.back();
    stack.pop_back();
    if (!exprs_.uses_inner(id) || !seen.insert(id).second || sources.count(id)) continue;
    for (ExprId a : exprs_.expr(id).args) stack.push_back(a);
  }
  return seen;
}

int CudaKernelWriter::plan_min_blocks_per_sm() const {
  if (!persistent_ || schedule_ != CudaSchedule::kBlockPerRow ||
      chunks_per_thread_ * vec_.width <= kMaxRowValuesPerThread / 2)
    return 1;
  // 16-bit rows stay in pairs per register as their vector loads fill them; 32-bit ones need
  // twice the registers and would spill.
  for (ExprId id : cached_loads_)
    if (dtype_size(k_.buffers[static_cast<size_t>(exprs_.expr(id).buffer)].dtype) > 2) return 1;
  std::set<ExprId> sources(cached_loads_.begin(), cached_loads_.end());
  for (const std::vector<ExprId>& kept : kept_values_) sources.insert(kept.begin(), kept.end());
  std::vector<ExprId> roots;
  for (const Store& s : k_.stores)
    if (s.per_inner) roots.insert(roots.end(), {s.index, s.value});
  for (ExprId id : per_element_reach(roots, sources))
    if (!sources.count(id) && exprs_.expr(id).kind == fusion::ExprKind::kLoad) return 1;
  return 3;
}

std::vector<std::vector<ExprId>> CudaKernelWriter::plan_kept_values() const {
  const size_t reductions = k_.reductions.size();
  // The roots of pass p: reduction p's value, or (p == reductions) the per-element stores'.
  auto roots_from = [&](size_t first) {
    std::vector<ExprId> roots;
    for (size_t p = first; p < reductions; ++p) roots.push_back(k_.reductions[p].value);
    for (const Store& s : k_.stores)
      if (s.per_inner) roots.insert(roots.end(), {s.index, s.value});
    return roots;
  };
  auto reach = [&](const std::vector<ExprId>& roots, const std::set<ExprId>& sources) {
    return per_element_reach(roots, sources);
  };
  std::set<ExprId> sources(cached_loads_.begin(), cached_loads_.end());
  std::vector<std::vector<ExprId>> kept(reductions);
  for (size_t r = 0; r < reductions; ++r) {
    const std::set<ExprId> here = reach({k_.reductions[r].value}, sources);
    const std::vector<ExprId> later_roots = roots_from(r + 1);
    const std::set<ExprId> later = reach(later_roots, sources);
    std::vector<ExprId> keep;
    for (ExprId id : here) {
      const fusion::Expr& e = exprs_.expr(id);
      // Worth a register array: an op's float result (a cast or select costs about a move).
      if (!later.count(id) || sources.count(id) || e.kind != fusion::ExprKind::kOp ||
          !is_floating(e.dtype))
        continue;
      bool read_later = std::find(later_roots.begin(), later_roots.end(), id) != later_roots.end();
      for (ExprId x : later) {
        const std::vector<ExprId>& args = exprs_.expr(x).args;
        read_later =
            read_later || (!here.count(x) && std::find(args.begin(), args.end(), id) != args.end());
      }
      if (read_later) keep.push_back(id);
    }
    if (keep.empty()) continue;
    std::set<ExprId> with = sources;
    with.insert(keep.begin(), keep.end());
    // The arrays live after this pass: the values kept and the loads later passes still read.
    const std::set<ExprId> live = reach(later_roots, with);
    int64_t arrays = 0;
    for (ExprId id : with) arrays += live.count(id) ? 1 : 0;
    if (arrays * chunks_per_thread_ * vec_.width > kMaxRowValuesPerThread) continue;
    kept[r] = std::move(keep);
    sources = std::move(with);
  }
  return kept;
}

void CudaKernelWriter::write_persistent_row(bool warp_per_row, std::set<ExprId>& row_done) {
  const std::string in = kRowIndent, chunk_in = in + "    ";
  const int w = vec_.width;
  const std::string base = "gf_ch * " + std::to_string(w);
  auto buffer_of = [&](ExprId id) { return exprs_.expr(id).buffer; };
  auto type_of = [&](ExprId id) {
    return storage_c_type(k_.buffers[static_cast<size_t>(buffer_of(id))].dtype);
  };
  // Read this thread's part of the row once.
  out_ << in << "// the row's loads, kept in registers\n";
  std::vector<ExprId> indices;
  for (ExprId id : cached_loads_) indices.push_back(exprs_.expr(id).args[0]);
  exprs_.emit(out_, indices, false, row_done, in, 0);
  for (ExprId id : cached_loads_)
    out_ << in << type_of(id) << " gf_c" << id << "[" << chunks_per_thread_ * w << "];\n";
  open_chunks(in);
  for (ExprId id : cached_loads_) {
    const ExprId index = exprs_.expr(id).args[0];
    const bool vector = w > 1 && vec_.loads[static_cast<size_t>(id)] == VectorAccess::kContiguous;
    out_ << chunk_in
         << (vector ? "{\n"
                    : "#pragma unroll\n" + chunk_in + "for (int gf_j = 0; gf_j < " +
                          std::to_string(w) + "; ++gf_j) {\n");
    unravel_run_point(vec_, k_.inner_dims, base, vector ? "0" : "gf_j", "i", chunk_in + "  ");
    std::set<ExprId> done;
    exprs_.emit(out_, {index}, true, done, chunk_in + "  ", k_.reductions.size());
    const std::string at = "b" + std::to_string(buffer_of(id)) + " + " + exprs_.index_ref(index);
    if (vector) {
      out_ << chunk_in << "  gf_load_vec<" << type_of(id) << ", " << w << ">(gf_c" << id
           << " + gf_k * " << w << ", " << at << ");\n";
    } else {
      out_ << chunk_in << "  gf_c" << id << "[gf_k * " << w << " + gf_j] = *(" << at << ");\n";
    }
    out_ << chunk_in << "}\n";
  }
  close_chunks(in);
  const std::string element = "[gf_k * " + std::to_string(w) + " + gf_j]";
  for (ExprId id : cached_loads_) exprs_.set_load_source(id, "gf_c" + std::to_string(id) + element);

  const std::vector<std::vector<ExprId>>& kept = kept_values_;
  for (size_t r = 0; r < k_.reductions.size(); ++r) {
    const fusion::RowReduction& red = k_.reductions[r];
    const std::string acc = "gf_acc" + std::to_string(r);
    out_ << in << "// reduction " << r << "\n";
    exprs_.emit(out_, {red.value}, false, row_done, in, r);
    for (ExprId id : kept[r]) {
      out_ << in << compute_c_type(exprs_.expr(id).dtype) << " gf_v" << id << "["
           << chunks_per_thread_ * w << "];  // kept for the passes after this one\n";
    }
    out_ << in << compute_c_type(red.accumulate) << " " << acc << " = "
         << exprs_.reduction_identity(r) << ";\n";
    open_chunks(in);
    out_ << chunk_in << "#pragma unroll\n"
         << chunk_in << "for (int gf_j = 0; gf_j < " << w << "; ++gf_j) {\n";
    unravel_run_point(vec_, k_.inner_dims, base, "gf_j", "i", chunk_in + "  ");
    std::set<ExprId> done;
    exprs_.emit(out_, {red.value}, true, done, chunk_in + "  ", r);
    for (ExprId id : kept[r])
      out_ << chunk_in << "  gf_v" << id << element << " = " << exprs_.tmp(id) << ";\n";
    out_ << chunk_in << "  " << acc << " = "
         << exprs_.reduction_combine(r, acc, exprs_.as_type(red.value, red.accumulate)) << ";\n"
         << chunk_in << "}\n";
    close_chunks(in);
    for (ExprId id : kept[r]) exprs_.set_value_source(id, "gf_v" + std::to_string(id) + element);
    write_row_combine(r, acc, warp_per_row, in);
  }
  write_per_outer_stores(row_done, in);

  std::vector<size_t> stores;
  std::vector<ExprId> roots;
  for (size_t s = 0; s < k_.stores.size(); ++s) {
    if (!k_.stores[s].per_inner) continue;
    stores.push_back(s);
    roots.insert(roots.end(), {k_.stores[s].index, k_.stores[s].value});
  }
  if (!stores.empty()) {
    exprs_.emit(out_, roots, false, row_done, in, k_.reductions.size());
    open_chunks(in);
    write_run(vec_, k_.inner_dims, true, base, stores, k_.reductions.size(),
              std::set<ExprId>(cached_loads_.begin(), cached_loads_.end()), chunk_in);
    close_chunks(in);
  }
  exprs_.clear_load_sources();
}

void CudaKernelWriter::write_rows() {
  const bool warp_per_row = schedule_ == CudaSchedule::kWarpPerRow;
  write_row_setup(warp_per_row);
  // The bound and the stride are uniform across the row's threads, so all of them reach every
  // shuffle and barrier.
  out_ << "  for (int64_t gf_r = gf_first; gf_r < " << outer_ << "; gf_r += gf_stride) {\n";
  unravel("gf_r", k_.outer_dims, "o", kRowIndent);
  std::set<ExprId> row_done;
  if (persistent_) {
    write_persistent_row(warp_per_row, row_done);
  } else {
    for (size_t r = 0; r < k_.reductions.size(); ++r)
      write_looped_reduction(r, warp_per_row, row_done);
    write_per_outer_stores(row_done, kRowIndent);
    write_looped_stores(row_done);
  }
  out_ << "  }\n";
}

}  // namespace gf::codegen
