// graphfuse demo: builds the built-in GPT-2-style stack through the C++ API and runs it.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <random>

#include "commands.h"
#include "graphfuse/graphfuse.h"
#include "graphfuse/models.h"

namespace gf::cli {

namespace {

struct DemoOptions {
  std::string device = "auto";
  int64_t layers = 4, d_model = 256, heads = 4, batch = 2, seq = 64;
  int iterations = 10;
  std::string dtype = "f32";
  bool print_graph = false;
};

Tensor random_input(DType dtype, std::vector<int64_t> dims) {
  Tensor t(DType::kF32, std::move(dims));
  std::mt19937 rng(7);
  std::normal_distribution<float> dist;
  for (float& v : std::span(t.data<float>(), static_cast<size_t>(t.numel()))) v = dist(rng);
  if (dtype == DType::kF32) return t;
  Tensor out(dtype, t.dims());
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float v = t.data<float>()[i];
    if (dtype == DType::kF16) out.data<Half>()[i] = Half(v);
    if (dtype == DType::kBF16) out.data<BFloat16>()[i] = BFloat16(v);
    if (dtype == DType::kF64) out.data<double>()[i] = v;
  }
  return out;
}

void print_summary(const Graph& g) {
  std::map<std::string_view, int> ops;
  for (const Node& n : g.nodes()) ++ops[op_name(n.op)];
  int64_t params = 0, bytes = 0;
  for (size_t v = 0; v < g.num_values(); ++v) {
    const Value& val = g.value(static_cast<ValueId>(v));
    if (!val.is_constant()) continue;
    params += val.constant.numel();
    bytes += static_cast<int64_t>(val.constant.nbytes());
  }
  std::printf("model %s: %zu nodes, %.2fM parameters (%.1f MB)\n", g.name.c_str(), g.num_nodes(),
              static_cast<double>(params) / 1e6, static_cast<double>(bytes) / 1e6);
  for (ValueId v : g.inputs()) {
    std::printf("  input  %s: %s\n", g.value(v).name.c_str(), g.value(v).type.to_string().c_str());
  }
  for (ValueId v : g.outputs()) {
    std::printf("  output %s: %s\n", g.value(v).name.c_str(), g.value(v).type.to_string().c_str());
  }
  std::printf("  ops:");
  for (const auto& [name, count] : ops) std::printf(" %.*s x%d", static_cast<int>(name.size()), name.data(), count);
  std::printf("\n");
}

int run_demo(const DemoOptions& o) {
  const auto dtype = parse_dtype(o.dtype);
  if (!dtype || !is_floating(*dtype)) {
    throw Error(ErrorCode::kInvalidArgument, "--dtype must be f32, f16, bf16 or f64, got '" + o.dtype + "'");
  }
  if (o.device != "auto" && o.device != "cpu" && o.device != "cuda") {
    throw Error(ErrorCode::kInvalidArgument, "--device must be auto, cpu or cuda, got '" + o.device + "'");
  }
  if (o.batch < 1 || o.seq < 1 || o.iterations < 1) {
    throw Error(ErrorCode::kInvalidArgument, "--batch, --seq and --iterations must be positive");
  }
  models::Gpt2Config config;
  config.layers = o.layers;
  config.d_model = o.d_model;
  config.heads = o.heads;
  config.dtype = *dtype;
  Graph graph = models::gpt2_stack(config);
  print_summary(graph);
  if (o.print_graph) std::printf("%s", print_graph(graph).c_str());

  // Device choice: cuda when asked; with "auto", cuda when a GPU is present.
  CudaProbe probe = probe_cuda();
  Device device = Device::kCpu;
  if (o.device == "cuda") {
    device = Device::kCuda;
  } else if (o.device == "auto") {
    if (probe.devices.empty()) {
      std::printf("device: cpu (cuda: %s)\n", probe.reason.c_str());
    } else {
      device = Device::kCuda;
      std::printf("device: cuda (%s)\n", probe.devices[0].name.c_str());
    }
  }

  std::vector<Tensor> inputs{random_input(*dtype, {o.batch, o.seq, o.d_model})};
  // Times `iterations` runs after one warm-up run (which compiles, for the fused backend).
  auto time_runs = [&](const Session& session, std::vector<Tensor>& outputs, double& first_ms) {
    std::vector<double> ms;
    for (int i = 0; i < o.iterations + 1; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      outputs = session.run(inputs);
      const double t = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (i == 0) first_ms = t; else ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    return ms;
  };
  SessionOptions reference_options{Device::kCpu};  // the oracle runs on the host
  reference_options.cpu_backend = CpuBackend::kReference;
  const Session reference(graph, reference_options);
  // On the GPU the fused program runs twice: its steps launched one by one (eager), and as one
  // CUDA graph per run.
  SessionOptions eager_options{device};
  eager_options.mode = ExecutionMode::kEager;
  const Session eager(graph, eager_options);
  const Session fused(std::move(graph), SessionOptions{device});
  std::vector<Tensor> ref_out, fused_out, eager_out;
  double ref_first = 0, fused_first = 0, eager_first = 0;
  const std::vector<double> ref_ms = time_runs(reference, ref_out, ref_first);
  const std::vector<double> fused_ms = time_runs(fused, fused_out, fused_first);
  const SessionStats st = fused.stats();
  std::printf("batch %lld x seq %lld on %s, median of %d runs:\n", static_cast<long long>(o.batch),
              static_cast<long long>(o.seq), std::string(device_name(device)).c_str(), o.iterations);
  std::printf("  reference interpreter (one op at a time): %9.3f ms\n", ref_ms[ref_ms.size() / 2]);
  if (device == Device::kCuda) {
    const std::vector<double> eager_ms = time_runs(eager, eager_out, eager_first);
    std::printf("  fused, eager launches:                    %9.3f ms  (%.2fx)\n", eager_ms[eager_ms.size() / 2],
                ref_ms[ref_ms.size() / 2] / eager_ms[eager_ms.size() / 2]);
  }
  std::printf("  fused%s (%d generated kernels, %d library/reference steps): %9.3f ms  (%.2fx; first run %.0f ms incl. compile)\n",
              st.graph_nodes > 0 ? " + CUDA graph" : "", st.fused_kernels, st.library_calls + st.reference_steps,
              fused_ms[fused_ms.size() / 2], ref_ms[ref_ms.size() / 2] / fused_ms[fused_ms.size() / 2], fused_first);
  const Tensor& y = fused_out[0];
  double sum = 0, sq = 0, max_err = 0, max_ref = 0;
  for (int64_t i = 0; i < y.numel(); ++i) {
    const double v = y.element_as_double(i), r = ref_out[0].element_as_double(i);
    sum += v;
    sq += v * v;
    max_err = std::max(max_err, std::fabs(v - r));
    max_ref = std::max(max_ref, std::fabs(r));
  }
  const double mean = sum / static_cast<double>(y.numel());
  std::printf("output y: %s, mean %.6f, std %.6f; fused vs reference: max relative error %.2e\n",
              y.type_string().c_str(), mean,
              std::sqrt(std::max(0.0, sq / static_cast<double>(y.numel()) - mean * mean)),
              max_ref > 0 ? max_err / max_ref : max_err);
  return 0;
}

}  // namespace

void add_demo_command(CLI::App& app, std::vector<Command>& commands) {
  auto o = std::make_shared<DemoOptions>();
  CLI::App* sub = app.add_subcommand(
      "demo", "Build the built-in GPT-2-style model with random weights and run it");
  sub->add_option("--device", o->device, "auto, cpu or cuda")->capture_default_str();
  sub->add_option("--layers", o->layers, "transformer layers")->capture_default_str();
  sub->add_option("--d-model", o->d_model, "model width")->capture_default_str();
  sub->add_option("--heads", o->heads, "attention heads")->capture_default_str();
  sub->add_option("--batch", o->batch, "batch size")->capture_default_str();
  sub->add_option("--seq", o->seq, "sequence length")->capture_default_str();
  sub->add_option("--iterations", o->iterations, "timed runs")->capture_default_str();
  sub->add_option("--dtype", o->dtype, "f32, f16, bf16 or f64")->capture_default_str();
  sub->add_flag("--print-graph", o->print_graph, "print the whole graph");
  commands.push_back({sub, [o] { return run_demo(*o); }});
}

}  // namespace gf::cli
