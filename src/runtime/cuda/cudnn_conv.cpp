// cuDNN convolution through the legacy cudnnConvolutionForward API: descriptors and the
// algorithm (cuDNN's heuristics, cudnnGetConvolutionForwardAlgorithm_v7) fixed at construction,
// so run() is two library calls that a stream capture can record. The bias is added by
// cudnnAddTensor after the convolution.
#ifdef GF_HAVE_CUDNN

#include <cudnn.h>

#include <algorithm>
#include <climits>
#include <string>
#include <vector>

#include "graphfuse/error.h"
#include "ir/infer_linear_family.h"
#include "runtime/cuda/cudnn_conv.h"

namespace gf::cuda {

namespace {

// The largest workspace an algorithm may ask for; cuDNN's heuristics rank faster algorithms
// first, and the few that want more are skipped for the next one.
constexpr size_t kMaxWorkspaceBytes = size_t{256} << 20;

void check_cudnn(cudnnStatus_t status, const std::string& call) {
  if (status != CUDNN_STATUS_SUCCESS) {
    throw Error(ErrorCode::kDeviceError, call + " failed: " + cudnnGetErrorString(status));
  }
}

#define GF_CUDNN(call) check_cudnn((call), #call)

std::string list_string(const std::vector<int>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

std::vector<int> contiguous(const std::vector<int>& dims) {
  std::vector<int> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

}  // namespace

bool cudnn_available() { return true; }

CudnnHandle::CudnnHandle() {
  cudnnHandle_t h = nullptr;
  GF_CUDNN(cudnnCreate(&h));
  handle_ = h;
}

CudnnHandle::~CudnnHandle() {
  plans_.clear();  // plans refer to the handle
  if (handle_) cudnnDestroy(static_cast<cudnnHandle_t>(handle_));
}

struct CudnnConv::State {
  std::string node;  // "node 'name' (Conv) with inputs [...]", for errors
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  size_t workspace = 0;

  ~State() {
    if (x) cudnnDestroyTensorDescriptor(x);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (bias) cudnnDestroyTensorDescriptor(bias);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
  }

  [[noreturn]] void unsupported(const std::string& why) const {
    throw Error(ErrorCode::kUnsupported, node + ": " + why + " (not through cuDNN)");
  }
  // Dims as cuDNN's ints, 1-D convolutions as 2-D ones of height 1.
  std::vector<int> cudnn_dims(const std::vector<int64_t>& dims, bool* fits) const {
    std::vector<int> out;
    for (int64_t d : dims) {
      *fits = *fits && d >= 1 && d <= INT_MAX;
      out.push_back(static_cast<int>(std::clamp<int64_t>(d, 0, INT_MAX)));
    }
    if (out.size() == 3) out.insert(out.begin() + 2, 1);
    return out;
  }
  // `dims` channels first ([N, C, spatial...]); the data channels last when `channels_last`.
  void tensor(cudnnTensorDescriptor_t* desc, cudnnDataType_t type, const std::vector<int>& dims,
              bool channels_last = false) {
    GF_CUDNN(cudnnCreateTensorDescriptor(desc));
    std::vector<int> strides = contiguous(dims);
    if (channels_last) {
      std::vector<int> stored(dims.begin(), dims.end());  // [N, spatial..., C]
      std::rotate(stored.begin() + 1, stored.begin() + 2, stored.end());
      const std::vector<int> stored_strides = contiguous(stored);
      strides[0] = stored_strides[0];
      strides[1] = 1;
      for (size_t i = 2; i < dims.size(); ++i) strides[i] = stored_strides[i - 1];
    }
    GF_CUDNN(cudnnSetTensorNdDescriptor(*desc, type, static_cast<int>(dims.size()), dims.data(),
                                        strides.data()));
  }
};

CudnnConv::CudnnConv(const CudnnHandle& handle, const Node& conv, const Graph& g, bool allow_tf32)
    : handle_(handle), state_(std::make_unique<State>()) {
  State& s = *state_;
  s.node = describe_node(g, conv);
  if ((conv.op != Op::kConv && conv.op != Op::kNhwcConv) || conv.inputs.size() < 2 ||
      conv.outputs.size() != 1) {
    throw Error(ErrorCode::kInvalidArgument, s.node + ": not a Conv or NhwcConv node");
  }
  const bool channels_last = conv.op == Op::kNhwcConv;
  const DType dtype = g.value(conv.inputs[0]).type.dtype;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  switch (dtype) {
    case DType::kF32: type = CUDNN_DATA_FLOAT; break;
    case DType::kF16: type = CUDNN_DATA_HALF; break;
    case DType::kBF16: type = CUDNN_DATA_BFLOAT16; break;
    default: s.unsupported("dtype " + std::string(dtype_name(dtype)) + " (only f32, f16, bf16)");
  }
  const bool has_bias = conv.inputs.size() > 2 && conv.inputs[2] != kNoValue;
  for (ValueId v : {conv.inputs[0], conv.inputs[1], conv.outputs[0]}) {
    if (!g.value(v).type.shape.is_static()) s.unsupported("shapes are not static");
  }
  // Shapes channels first from here on: cuDNN's dims are, whatever the layout in memory.
  auto channels_first = [&](ValueId v) {
    std::vector<int64_t> d = g.value(v).type.shape.static_dims();
    if (channels_last && d.size() >= 3) std::rotate(d.begin() + 1, d.end() - 1, d.end());
    return d;
  };
  const std::vector<int64_t> x = channels_first(conv.inputs[0]);
  const std::vector<int64_t> wt = channels_first(conv.inputs[1]);
  const std::vector<int64_t> y = channels_first(conv.outputs[0]);
  if (x.size() < 3 || x.size() > 5 || wt.size() != x.size() || y.size() != x.size()) {
    s.unsupported("only 1-D, 2-D and 3-D convolutions");
  }
  if (channels_last && x.size() != 4) s.unsupported("channels-last data is taken in 2-D only");
  if (g.value(conv.inputs[1]).type.dtype != dtype ||
      (has_bias && g.value(conv.inputs[2]).type.dtype != dtype)) {
    s.unsupported("W and B must have X's dtype");
  }
  const int64_t group = conv.attrs.get_int("group", 1);
  if (group < 1 || group > INT_MAX) s.unsupported("group " + std::to_string(group));

  // Geometry as inference resolved it; cuDNN pads both ends of an axis alike.
  WindowAttrs win;
  std::vector<int> pads, strides, dilations;
  try {
    win = read_window_attrs(conv.attrs, std::vector<int64_t>(wt.begin() + 2, wt.end()), false);
    for (size_t i = 0; i + 2 < x.size(); ++i) {
      const AxisWindow a = resolve_window_axis(win, i, x[i + 2]);
      if (a.pad_begin != a.pad_end) {
        s.unsupported("asymmetric padding " + std::to_string(a.pad_begin) + "/" +
                      std::to_string(a.pad_end) + " on spatial axis " + std::to_string(i));
      }
      if (a.pad_begin > INT_MAX || win.strides[i] > INT_MAX || win.dilations[i] > INT_MAX) {
        s.unsupported("window attributes beyond int range");
      }
      pads.push_back(static_cast<int>(a.pad_begin));
      strides.push_back(static_cast<int>(win.strides[i]));
      dilations.push_back(static_cast<int>(win.dilations[i]));
    }
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kUnsupported) throw;
    throw Error(e.code(), s.node + ": " + e.what());
  }
  if (pads.size() == 1) {  // 1-D as 2-D: a height-1 axis first
    pads.insert(pads.begin(), 0);
    strides.insert(strides.begin(), 1);
    dilations.insert(dilations.begin(), 1);
  }

  bool fits = true;
  const std::vector<int> xd = s.cudnn_dims(x, &fits), wd = s.cudnn_dims(wt, &fits),
                         yd = s.cudnn_dims(y, &fits);
  int64_t largest = 0;
  for (const auto* dims : {&x, &wt, &y}) {
    int64_t n = 1;
    for (int64_t d : *dims) n *= d;
    largest = std::max(largest, n);
  }
  if (!fits || largest > INT_MAX) s.unsupported("empty tensors or more than 2^31 elements");

  s.tensor(&s.x, type, xd, channels_last);
  s.tensor(&s.y, type, yd, channels_last);
  GF_CUDNN(cudnnCreateFilterDescriptor(&s.w));
  GF_CUDNN(cudnnSetFilterNdDescriptor(s.w, type,
                                      channels_last ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                                      static_cast<int>(wd.size()), wd.data()));
  GF_CUDNN(cudnnCreateConvolutionDescriptor(&s.conv));
  // Accumulation in f32 for every storage type (cuDNN's PSEUDO_HALF / PSEUDO_BFLOAT16 configs).
  GF_CUDNN(cudnnSetConvolutionNdDescriptor(s.conv, static_cast<int>(pads.size()), pads.data(),
                                           strides.data(), dilations.data(),
                                           CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  GF_CUDNN(cudnnSetConvolutionGroupCount(s.conv, static_cast<int>(group)));
  // f32 stays f32 (FMA kernels) unless TF32 is allowed; 16-bit types use tensor cores.
  const bool f32_exact = dtype == DType::kF32 && !allow_tf32;
  GF_CUDNN(cudnnSetConvolutionMathType(s.conv, f32_exact ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH));

  std::vector<int> out(yd.size());
  GF_CUDNN(cudnnGetConvolutionNdForwardOutputDim(s.conv, s.x, s.w, static_cast<int>(out.size()),
                                                 out.data()));
  if (out != yd) {
    s.unsupported("cuDNN computes output " + list_string(out) + ", the graph has " +
                  list_string(yd));
  }

  const auto h = static_cast<cudnnHandle_t>(handle_.get());
  int max_algos = 0;
  GF_CUDNN(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &max_algos));
  std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<size_t>(std::max(max_algos, 1)));
  int returned = 0;
  GF_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(h, s.x, s.w, s.conv, s.y, max_algos, &returned,
                                                  perf.data()));
  auto math_allowed = [&](cudnnMathType_t m) {
    switch (m) {
      case CUDNN_FMA_MATH:
        return true;
      case CUDNN_DEFAULT_MATH:  // may pick TF32 for f32 on sm_80 and later
      case CUDNN_TENSOR_OP_MATH:
        return !f32_exact;
      case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION:  // rounds f32 data to f16
        return dtype != DType::kF32;
    }
    return false;
  };
  bool chosen = false;
  for (int i = 0; i < returned && !chosen; ++i) {
    const cudnnConvolutionFwdAlgoPerf_t& p = perf[static_cast<size_t>(i)];
    if (p.status != CUDNN_STATUS_SUCCESS || p.memory > kMaxWorkspaceBytes ||
        !math_allowed(p.mathType)) {
      continue;
    }
    GF_CUDNN(cudnnSetConvolutionMathType(s.conv, p.mathType));
    s.algo = p.algo;
    chosen = true;
  }
  if (!chosen) s.unsupported("cuDNN offers no algorithm for this convolution");
  GF_CUDNN(cudnnGetConvolutionForwardWorkspaceSize(h, s.x, s.w, s.conv, s.y, s.algo, &s.workspace));

  if (has_bias) {
    std::vector<int> bd(yd.size(), 1);
    bd[1] = yd[1];
    s.tensor(&s.bias, type, bd);
  }
}

CudnnConv::~CudnnConv() = default;

size_t CudnnConv::workspace_bytes() const { return state_->workspace; }

void CudnnConv::run(const void* x, const void* w, const void* bias, void* y, void* workspace,
                    cudaStream_t stream) const {
  const State& s = *state_;
  if (s.workspace > 0 && workspace == nullptr) {
    throw Error(ErrorCode::kInvalidArgument,
                s.node + ": cuDNN needs a workspace of " + std::to_string(s.workspace) + " bytes");
  }
  if (s.bias && bias == nullptr) {
    throw Error(ErrorCode::kInvalidArgument, s.node + ": the node has a bias but none was passed");
  }
  const auto h = static_cast<cudnnHandle_t>(handle_.get());
  // alpha and beta are float for f32, f16 and bf16 data.
  const float one = 1.0f, zero = 0.0f;
  try {
    GF_CUDNN(cudnnSetStream(h, stream));
    GF_CUDNN(cudnnConvolutionForward(h, &one, s.x, x, s.w, w, s.conv, s.algo, workspace,
                                     s.workspace, &zero, s.y, y));
    if (s.bias) GF_CUDNN(cudnnAddTensor(h, &one, s.bias, bias, &one, s.y, y));
  } catch (const Error& e) {
    throw Error(e.code(), s.node + ": " + e.what());
  }
}

}  // namespace gf::cuda

#endif  // GF_HAVE_CUDNN
