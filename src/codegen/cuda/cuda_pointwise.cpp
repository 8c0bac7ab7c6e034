// The pointwise schedule: a grid-stride loop over runs of vector_width points (vector loads and
// stores), then a scalar loop over the points after the last whole run.
#include <set>

#include "codegen/cuda/cuda_kernel_writer.h"

namespace gf::codegen {

using fusion::ExprId;
using fusion::Store;

void CudaKernelWriter::write_pointwise_points(const std::string& first, const std::string& indent) {
  const std::string in = indent + "  ";
  out_ << indent << "for (int64_t gf_flat = " << first << "; gf_flat < " << outer_
       << "; gf_flat += gf_stride) {\n";
  unravel("gf_flat", k_.outer_dims, "o", in);
  // Without an inner space a per-inner store runs once per point, after the others (as on the
  // CPU).
  std::set<ExprId> done;
  for (bool per_inner : {false, true}) {
    for (const Store& s : k_.stores) {
      if (s.per_inner != per_inner) continue;
      exprs_.emit(out_, {s.index, s.value}, false, done, in, 0);
      out_ << in << exprs_.store_statement(s) << "\n";
    }
  }
  out_ << indent << "}\n";
}

void CudaKernelWriter::write_pointwise_runs() {
  const int w = vec_.width;
  const int64_t runs = outer_ / w;
  std::vector<size_t> stores;
  for (bool per_inner : {false, true})
    for (size_t s = 0; s < k_.stores.size(); ++s)
      if (k_.stores[s].per_inner == per_inner) stores.push_back(s);
  // One-element inputs (scalars broadcast to every point) are read once, ahead of the loop:
  // inside it the compiler cannot tell that the stores leave them alone, and reads them again
  // every run.
  for (size_t id = 0; id < k_.exprs.size(); ++id) {
    const fusion::Expr& e = k_.exprs[id];
    if (e.kind != fusion::ExprKind::kLoad || exprs_.uses_inner(static_cast<ExprId>(id))) continue;
    const fusion::KernelBuffer& b = k_.buffers[static_cast<size_t>(e.buffer)];
    if (b.is_output || dims_product(b.dims) != 1) continue;
    out_ << "  const " << storage_c_type(b.dtype) << " gf_u" << id << " = b" << e.buffer
         << "[0];\n";
    hoisted_loads_.insert(static_cast<ExprId>(id));
  }
  // gf_base >= 0: without the hint the index arithmetic divides and takes remainders as signed.
  out_ << "  for (int64_t gf_run = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; gf_run < "
       << runs << "; gf_run += gf_stride) {\n"
       << "    const " << exprs_.index_c_type() << " gf_base = (" << exprs_.index_c_type()
       << ")gf_run * " << w << ";\n"
       << "    __builtin_assume(gf_base >= 0);\n";
  write_run(vec_, k_.outer_dims, false, "gf_base", stores, 0, {}, "    ");
  out_ << "  }\n";
  if (outer_ % w != 0) {
    out_ << "  // the points after the last whole run\n";
    write_pointwise_points(
        std::to_string(runs * w) + " + (int64_t)blockIdx.x * blockDim.x + threadIdx.x", "  ");
  }
}

void CudaKernelWriter::write_pointwise() {
  out_ << "  const int64_t gf_stride = (int64_t)gridDim.x * blockDim.x;\n";
  if (vec_.width > 1) {
    write_pointwise_runs();
  } else {
    write_pointwise_points("(int64_t)blockIdx.x * blockDim.x + threadIdx.x", "  ");
  }
}

}  // namespace gf::codegen
