// The sliding-window anchor kernels: MaxPool / AveragePool (kernels/pool.cuh), the global pools
// (kernels/global_pool.cuh) and the direct Conv (kernels/conv_direct.cuh). The window geometry
// comes from the functions shape inference and the reference kernels use (read_window_attrs,
// resolve_window_axis), so the three can never disagree on an output size or a padding.
#include <algorithm>

#include "codegen/cuda/anchor_kernels_impl.h"
#include "codegen/cuda/anchor_writer.h"
#include "codegen/cuda/kernels/conv_direct_cuh.h"
#include "codegen/cuda/kernels/global_pool_cuh.h"
#include "codegen/cuda/kernels/pool_cuh.h"
#include "graphfuse/error.h"
#include "ir/infer_linear_family.h"

namespace gf::codegen {

namespace {

constexpr int kThreads = kCudaBlockThreads;

int64_t product(const std::vector<int64_t>& v, size_t from = 0) {
  int64_t n = 1;
  for (size_t i = from; i < v.size(); ++i) n *= v[i];
  return n;
}

// Row-major strides of `dims`.
std::vector<int64_t> contiguous(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

// The windows of a pool or Conv node over X [N, C, spatial...], resolved per spatial axis.
struct ResolvedWindows {
  WindowAttrs attrs;
  std::vector<int64_t> in, out, pad_begin, pad_end;
};

ResolvedWindows resolve(const Node& node, const Graph& g, const std::vector<int64_t>& x,
                        std::vector<int64_t> kernel, bool pool) {
  ResolvedWindows r;
  try {
    r.attrs = read_window_attrs(node.attrs, std::move(kernel), pool);
    r.in.assign(x.begin() + 2, x.end());
    for (size_t i = 0; i < r.in.size(); ++i) {
      const AxisWindow a = resolve_window_axis(r.attrs, i, r.in[i]);
      r.out.push_back(a.out);
      r.pad_begin.push_back(a.pad_begin);
      r.pad_end.push_back(a.pad_end);
    }
  } catch (const Error& e) {
    throw Error(e.code(), describe_node(g, node) + ": " + e.what());
  }
  return r;
}

// The per-axis arrays both window kernels read.
void write_windows(anchor::AnchorWriter& w, const ResolvedWindows& r) {
  w.constant("kRank", static_cast<int64_t>(r.in.size()));
  w.constant("kInPlane", product(r.in));
  w.constant("kOutPlane", product(r.out));
  w.constant("kTaps", product(r.attrs.kernel));
  w.array("kIn", r.in);
  w.array("kInStride", contiguous(r.in));
  w.array("kOut", r.out);
  w.array("kKernel", r.attrs.kernel);
  w.array("kStride", r.attrs.strides);
  w.array("kDilation", r.attrs.dilations);
  w.array("kPadBegin", r.pad_begin);
  w.array("kPadEnd", r.pad_end);
}

std::vector<int64_t> spatial_input(const Node& node, const Graph& g, DType* dtype) {
  *dtype = g.value(node.inputs.at(0)).type.dtype;
  anchor::expect_float_storage(node, g, *dtype);
  std::vector<int64_t> x = anchor::static_dims(node, g, node.inputs[0]);
  if (x.size() < 3) {
    anchor::unsupported(node, g, "X of rank " + std::to_string(x.size()) + " (needs N, C, spatial)");
  }
  return x;
}

}  // namespace

CudaKernelSource emit_pool_kernel(const Node& node, const Graph& g, const std::string& name,
                                  const CudaEmitOptions& options) {
  DType dtype;
  const std::vector<int64_t> x = spatial_input(node, g, &dtype);
  if (node.outputs.size() != 1) anchor::unsupported(node, g, "a second (Indices) output");
  const int64_t planes = x[0] * x[1];

  if (node.op == Op::kGlobalMaxPool || node.op == Op::kGlobalAveragePool) {
    anchor::AnchorWriter w(node, g, name, "global pool, one warp per plane");
    w.element_type(dtype);
    w.constant("kThreads", kThreads);
    w.constant("kPlanes", planes);
    w.constant("kPlaneSize", product(x, 2));
    w.flag("kIsMax", node.op == Op::kGlobalMaxPool);
    LaunchConfig launch = anchor::grid_stride_launch(planes * 32, kThreads, options.sm_count);
    return w.finish(embedded::global_pool_cuh, "gf_global_pool", launch);
  }

  if (!node.attrs.has("kernel_shape")) anchor::unsupported(node, g, "no kernel_shape");
  const ResolvedWindows r = resolve(node, g, x, node.attrs.get_ints("kernel_shape"), true);
  const bool is_max = node.op == Op::kMaxPool;
  anchor::AnchorWriter w(node, g, name,
                         std::string(is_max ? "max" : "average") + " pool, one thread per output");
  w.element_type(dtype);
  w.constant("kThreads", kThreads);
  const int64_t total = planes * product(r.out);
  w.constant("kTotal", total);
  write_windows(w, r);
  w.flag("kIsMax", is_max);
  w.flag("kCountIncludePad", node.attrs.get_int("count_include_pad", 0) != 0);
  return w.finish(embedded::pool_cuh, "gf_pool",
                  anchor::grid_stride_launch(total, kThreads, options.sm_count));
}

CudaKernelSource emit_conv_kernel(const Node& node, const Graph& g, const std::string& name,
                                  const CudaEmitOptions& options) {
  DType dtype;
  const std::vector<int64_t> x = spatial_input(node, g, &dtype);
  const std::vector<int64_t> wt = anchor::static_dims(node, g, node.inputs.at(1));
  if (g.value(node.inputs[1]).type.dtype != dtype) anchor::unsupported(node, g, "W's dtype differs from X's");
  const bool has_bias = node.inputs.size() > 2 && node.inputs[2] != kNoValue;
  if (has_bias && g.value(node.inputs[2]).type.dtype != dtype) {
    anchor::unsupported(node, g, "B's dtype differs from X's");
  }
  const int64_t group = node.attrs.get_int("group", 1);
  const int64_t channels = x[1], filters = wt[0];
  if (wt.size() != x.size() || group < 1 || channels != wt[1] * group || filters % group != 0) {
    anchor::unsupported(node, g, "W does not fit X and group " + std::to_string(group));
  }
  const ResolvedWindows r =
      resolve(node, g, x, std::vector<int64_t>(wt.begin() + 2, wt.end()), /*pool=*/false);

  anchor::AnchorWriter w(node, g, name, "direct convolution, one thread per output");
  w.element_type(dtype);
  w.constant("kThreads", kThreads);
  const int64_t total = x[0] * filters * product(r.out);
  w.constant("kTotal", total);
  // Divisors kept nonzero: with no filters there is nothing to launch.
  w.constant("kChannels", channels);
  w.constant("kFilters", std::max<int64_t>(filters, 1));
  w.constant("kGroupChannels", channels / group);
  w.constant("kGroupFilters", std::max<int64_t>(filters / group, 1));
  write_windows(w, r);
  w.flag("kHasBias", has_bias);
  return w.finish(embedded::conv_direct_cuh, "gf_conv_direct",
                  anchor::grid_stride_launch(total, kThreads, options.sm_count));
}

}  // namespace gf::codegen
