// The CUDA emitter's internals, shared by its files: cuda_emitter.cpp (planning, header, entry
// point), cuda_pointwise.cpp and cuda_rows.cpp (one schedule each). Not a public header.
#pragma once

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/common/index_analysis.h"
#include "codegen/common/kernel_exprs.h"
#include "codegen/cuda/cuda_emitter.h"

namespace gf::codegen {

inline constexpr int kWarpSize = 32;
inline constexpr int kWarpsPerBlock = kCudaBlockThreads / kWarpSize;
static_assert(kCudaBlockThreads % kWarpSize == 0 && kWarpsPerBlock <= kWarpSize);

int64_t dims_product(const std::vector<int64_t>& dims);

class CudaKernelWriter {
 public:
  CudaKernelWriter(const fusion::FusedKernel& k, const Graph& g, const CudaEmitOptions& o);
  CudaKernelSource write();

 private:
  // --- planning (cuda_emitter.cpp)
  void plan();
  // The widest vector plan over `dims` whose loads and stores `ok` accepts, or width 1.
  VectorPlan widest_plan(fusion::ExprKind kind, const std::vector<int64_t>& dims,
                         bool (CudaKernelWriter::*ok)(const VectorPlan&) const) const;
  bool pointwise_plan_ok(const VectorPlan& p) const;
  bool row_plan_ok(const VectorPlan& p) const;
  uint32_t alignment() const;
  LaunchConfig launch_config() const;
  void write_header();
  // `const <index type> <prefix><first_axis + d> = ...` for each dim of `dims`, from the flat
  // index `flat`.
  void unravel(const std::string& flat, const std::vector<int64_t>& dims, const std::string& prefix,
               const std::string& indent, size_t first_axis = 0);
  // The indices of point `base + lane` of a run (base: a multiple of the plan's width).
  void unravel_run_point(const VectorPlan& p, const std::vector<int64_t>& dims,
                         const std::string& base, const std::string& lane,
                         const std::string& prefix, const std::string& indent);
  // Writes `stores` (indices into k_.stores) for the run of p.width points at `base` of the
  // loop space `dims` (exprs of `inner_level` there; earlier levels already written): vector
  // loads and stores where `p` allows, the points unrolled. Loads in `cached` already have a
  // source set.
  void write_run(const VectorPlan& p, const std::vector<int64_t>& dims, bool inner_level,
                 const std::string& base, const std::vector<size_t>& stores, size_t rows_ready,
                 const std::set<fusion::ExprId>& cached, const std::string& indent);
  // Ahead of a run's points (p.width even): the 16-bit op results among `roots`' args that
  // round where they are computed, computed for every point of the run first and then rounded
  // a pair per conversion instruction, in waves where one of them reads another. Sets their
  // value sources (`gf_r<id>[gf_j]`) and returns their ids, for the caller to clear.
  std::vector<fusion::ExprId> write_paired_roundings(const VectorPlan& p,
                                                     const std::vector<int64_t>& dims,
                                                     bool inner_level, const std::string& base,
                                                     const std::vector<fusion::ExprId>& roots,
                                                     size_t rows_ready, const std::string& indent);
  // Ahead of a run's points (p.width even, rounded 16-bit ops): the f16/bf16 Add, Sub, Mul,
  // Relu, Abs and Neg among `roots`' args that read only exact 16-bit values (`vector_loads` of
  // their format, or each other), computed a pair per instruction into gf_h<id>[width / 2]
  // (cuda_packed.cpp). Sets their value sources (the pair's half as a float) and returns their
  // ids, for the caller to clear.
  std::vector<fusion::ExprId> write_packed_ops(const VectorPlan& p, bool inner_level,
                                               const std::vector<fusion::ExprId>& roots,
                                               const std::vector<fusion::ExprId>& vector_loads,
                                               const std::string& indent);
  bool packed_ops_available(DType t) const;
  // A bf16 Mul whose product float holds exactly: one operand a constant of multiples of 2^-16.
  bool exact_bf16_product(const fusion::Expr& mul) const;
  // `roots` and every expr they read; with stop_at_sources, not the args of an expr that has
  // a load or value source (it is read from elsewhere).
  std::set<fusion::ExprId> closure(const std::vector<fusion::ExprId>& roots,
                                   bool stop_at_sources = false) const;
  bool buffer_loaded_and_stored() const;

  // --- pointwise (cuda_pointwise.cpp)
  void write_pointwise();
  void write_pointwise_points(const std::string& first, const std::string& indent);
  void write_pointwise_runs();

  // --- rows (cuda_rows.cpp)
  void write_rows();
  void write_row_setup(bool warp_per_row);
  void write_row_combine(size_t r, const std::string& acc, bool warp_per_row,
                         const std::string& indent);
  void write_warp_butterfly(size_t r, const std::string& acc, int first_mask,
                            const std::string& indent);
  void write_per_outer_stores(std::set<fusion::ExprId>& row_done, const std::string& indent);
  void write_looped_reduction(size_t r, bool warp_per_row, std::set<fusion::ExprId>& row_done);
  void write_looped_stores(std::set<fusion::ExprId>& row_done);
  void open_inner_loop(const std::string& indent);
  void write_persistent_row(bool warp_per_row, std::set<fusion::ExprId>& row_done);
  // Per reduction pass of a persistent row, the per-element values it computes that later
  // passes need (softmax's exp(x - max), a norm's x - mean), to keep in registers for them
  // instead of computing them again; none where the registers would pass
  // kMaxRowValuesPerThread.
  std::vector<std::vector<fusion::ExprId>> plan_kept_values() const;
  // The per-element exprs `roots` read, not through `sources` (values read from registers).
  std::set<fusion::ExprId> per_element_reach(const std::vector<fusion::ExprId>& roots,
                                             const std::set<fusion::ExprId>& sources) const;
  // __launch_bounds__' minimum blocks per SM: 3 for a persistent block-per-row kernel whose
  // 16-bit row takes more than half of kMaxRowValuesPerThread values a thread and whose store
  // pass reads only registers. The compiler's own count there (128 registers) holds two rows per
  // SM; three (at most 85 registers, enough for softmax over 16k-element rows without a spill) keep
  // a third row's loads in flight. A store pass that loads (a norm's gamma and beta) would
  // spill at that count: 1 (no minimum).
  int plan_min_blocks_per_sm() const;
  // `for` over this thread's chunks of the row, with the bound check; closes with close_chunks.
  void open_chunks(const std::string& indent);
  void close_chunks(const std::string& indent);

  const fusion::FusedKernel& k_;
  const Graph& g_;
  const CudaEmitOptions& opts_;
  Target target_;
  KernelExprWriter exprs_;
  int64_t outer_, inner_;
  std::ostringstream out_;

  CudaSchedule schedule_ = CudaSchedule::kPointwise;
  VectorPlan vec_;           // over the outer space (pointwise) or the inner space (rows)
  bool persistent_ = false;  // rows kept in registers
  int64_t chunks_ = 0;       // persistent rows: vectors per row
  int64_t chunks_per_thread_ = 0;
  std::vector<fusion::ExprId> cached_loads_;  // persistent rows: loads kept in registers
  // Pointwise runs: loads of one-element inputs, read ahead of the loop into gf_u<id>.
  std::set<fusion::ExprId> hoisted_loads_;
  // Persistent rows, planned once in plan(): plan_kept_values, plan_min_blocks_per_sm.
  std::vector<std::vector<fusion::ExprId>> kept_values_;
  int min_blocks_per_sm_ = 1;
};

}  // namespace gf::codegen
