// Device latency of an ONNX model on caller buffers, the figure to set beside a framework's:
// no host<->device copies inside the timed region (`graphfuse run` times those too).
//
//   bench_model_latency MODEL.onnx --input NAME=FILE.npy ... [--precision fp32|tf32|fp16|bf16]
//       [--mode graph|eager] [--programmatic-launch on|off] [--early-setup on|off]
//       [--skinny-prefetch N] [--iters N] [--warmup N] [--output-dir DIR] [--json FILE]
//
// Imports the model with the inputs' shapes bound (shape subgraphs fold as `graphfuse run`
// folds them), compiles a CUDA Session and its DeviceProgram, uploads the inputs once, then:
//   1. compile: Session + DeviceProgram + the first run to completion (NVRTC, cuBLASLt/cuDNN
//      plans, weight upload, graph instantiation); the kernel cache's cubins are counted before
//      and after, so a cold cache (XDG_CACHE_HOME pointing at an empty folder) is told apart.
//      The process's CUDA context is made first and timed apart ("context_s"): a process pays
//      for it once, whatever it compiles (as a PyTorch process does before torch.compile); then
//      cuBLASLt's one-time set-up starts on a thread (gf::start_cuda_setup) while the model is
//      imported, as `graphfuse run` does;
//   2. DeviceProgram::run on the same buffers, timed with CUDA events per run;
//   3. the program populated into a CUDA graph of our own (flat), instantiated and launched
//      with cudaGraphLaunch, timed the same way, writing into its own output buffers.
// Each pass's outputs are written as DIR/run/outK.npy and DIR/caller_graph/outK.npy (K: the
// output's index; its name is in the JSON), so every reported time has outputs to check.
// Output buffers start as all-ones bytes (NaN in f16/f32): an output a pass fails to write
// cannot pass a check.
//
// Exit status: 0 ok, 1 error (message on stderr, and in the JSON as "error" with the stage),
// 2 no CUDA device.
#include <cuda_runtime_api.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codegen/cuda/nvrtc_compiler.h"
#include "graphfuse/cuda_graph.h"
#include "graphfuse/device.h"
#include "graphfuse/error.h"
#include "graphfuse/npy.h"
#include "graphfuse/onnx.h"
#include "graphfuse/session.h"
#include "passes/fold_constants.h"
#include "runtime/cpu/reference/interpreter.h"

namespace gf {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

void check(cudaError_t e, const char* call) {
  if (e != cudaSuccess)
    throw Error(ErrorCode::kDeviceError, std::string(call) + ": " + cudaGetErrorString(e));
}
#define CK(call) check((call), #call)

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

struct Options {
  std::string model, precision = "fp32", mode = "graph", output_dir, json_path;
  std::string programmatic_launch = "on", early_setup = "on";
  std::vector<std::string> inputs;
  int iters = 100, warmup = 10;
  int skinny_prefetch = SessionOptions{}.skinny_prefetch_distance;
};

Precision parse_precision(const std::string& name) {
  static const std::map<std::string, Precision> kNames = {{"fp32", Precision::kFp32},
                                                          {"tf32", Precision::kTf32},
                                                          {"fp16", Precision::kFp16},
                                                          {"bf16", Precision::kBf16}};
  auto it = kNames.find(name);
  if (it == kNames.end()) {
    throw Error(ErrorCode::kInvalidArgument,
                "--precision must be fp32, tf32, fp16 or bf16, got '" + name + "'");
  }
  return it->second;
}

// Nearest-rank quantiles, as `graphfuse run` reports them.
json summarize_us(std::vector<double> us) {
  if (us.empty()) return nullptr;
  std::sort(us.begin(), us.end());
  auto at = [&](double q) {
    return us[static_cast<size_t>(q * static_cast<double>(us.size() - 1) + 0.5)];
  };
  double sum = 0;
  for (double v : us) sum += v;
  return {{"median", at(0.5)},
          {"p90", at(0.9)},
          {"min", us.front()},
          {"mean", sum / static_cast<double>(us.size())},
          {"iters", us.size()}};
}

// Cubins in the CUDA kernel cache now (0 when the folder does not exist).
int cached_cubins(const fs::path& dir) {
  std::error_code ec;
  int n = 0;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".cubin") ++n;
  }
  return n;
}

class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) { CK(cudaMalloc(&p_, std::max<size_t>(bytes, 1))); }
  ~DeviceBuffer() { cudaFree(p_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return p_; }

 private:
  void* p_ = nullptr;
};

class Events {
 public:
  Events() {
    CK(cudaEventCreate(&start_));
    CK(cudaEventCreate(&stop_));
  }
  ~Events() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  // Device time of what `enqueue` puts on `stream`, waited for each time (as a framework's
  // per-call timing with events does).
  template <class F>
  std::vector<double> time_us(cudaStream_t stream, int warmup, int iters, F enqueue) {
    for (int i = 0; i < warmup; ++i) enqueue();
    CK(cudaStreamSynchronize(stream));
    std::vector<double> us;
    for (int i = 0; i < iters; ++i) {
      CK(cudaEventRecord(start_, stream));
      enqueue();
      CK(cudaEventRecord(stop_, stream));
      CK(cudaEventSynchronize(stop_));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, start_, stop_));
      us.push_back(1e3 * ms);
    }
    return us;
  }

 private:
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

size_t nbytes(const TensorType& t) {
  return static_cast<size_t>(t.shape.numel()) * dtype_size(t.dtype);
}

// One set of output buffers, filled with all-ones bytes (NaN for floats).
std::vector<std::unique_ptr<DeviceBuffer>> poisoned_outputs(const DeviceProgram& program) {
  std::vector<std::unique_ptr<DeviceBuffer>> out;
  for (const TensorType& t : program.output_types()) {
    out.push_back(std::make_unique<DeviceBuffer>(nbytes(t)));
    CK(cudaMemset(out.back()->get(), 0xff, nbytes(t)));
  }
  return out;
}

// Downloads the outputs and writes DIR/SUB/outK.npy; returns the files' paths.
std::vector<std::string> write_outputs(const DeviceProgram& program,
                                       const std::vector<std::unique_ptr<DeviceBuffer>>& buffers,
                                       const std::string& dir, const std::string& sub) {
  std::vector<std::string> files;
  if (dir.empty()) return files;
  const fs::path folder = fs::path(dir) / sub;
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec)
    throw Error(ErrorCode::kIoError, "cannot create '" + folder.string() + "': " + ec.message());
  for (size_t i = 0; i < buffers.size(); ++i) {
    const TensorType& t = program.output_types()[i];
    Tensor host(t.dtype, t.shape.static_dims());
    CK(cudaMemcpy(host.raw(), buffers[i]->get(), host.nbytes(), cudaMemcpyDeviceToHost));
    files.push_back((folder / ("out" + std::to_string(i) + ".npy")).string());
    write_npy(files.back(), host);
  }
  return files;
}

json stats_json(const SessionStats& st) {
  json j;
  j["graph_mode"] = st.graph_nodes > 0;
  j["graph_nodes"] = st.graph_nodes;
  j["programmatic_edges"] = st.programmatic_edges;
  const CompileSeconds& c = st.compile_seconds;
  j["compile_seconds"] = {{"passes", c.passes},   {"steps", c.steps},   {"libraries", c.libraries},
                          {"kernels", c.kernels}, {"memory", c.memory}, {"weights", c.weights},
                          {"graph", c.graph},     {"total", c.total}};
  j["fused_kernels"] = st.fused_kernels;
  j["library_calls"] = st.library_calls;
  j["host_steps"] = st.reference_steps;
  j["fallback_nodes"] = st.fallback_nodes;
  j["fallback_reasons"] = st.fallback_reasons;
  j["arena_bytes"] = st.arena_bytes;
  j["arena_lower_bound"] = st.arena_lower_bound;
  return j;
}

Graph import_model(const std::string& path, const std::map<std::string, Tensor>& inputs) {
  OnnxImportOptions options;
  for (const auto& [name, t] : inputs) options.input_shapes.emplace(name, t.dims());
  auto evaluate = [](const Node& n, std::span<const Tensor> in) { return ref::run_node(n, in); };
  options.evaluate = evaluate;
  Graph g = import_onnx(path, options);
  fold_constants(g, evaluate);
  return g;
}

// The inputs in the graph's order; every graph input must be given, each once, with its type.
std::vector<const Tensor*> ordered_inputs(const Graph& g,
                                          const std::map<std::string, Tensor>& given) {
  std::vector<const Tensor*> out;
  std::vector<std::string> names;
  for (ValueId v : g.inputs()) {
    const Value& in = g.value(v);
    names.push_back(in.name);
    auto it = given.find(in.name);
    if (it == given.end()) {
      throw Error(ErrorCode::kInvalidArgument, "the model's input '" + in.name + "' (" +
                                                   in.type.to_string() + ") has no --input " +
                                                   in.name + "=FILE.npy");
    }
    if (it->second.dtype() != in.type.dtype) {
      throw Error(ErrorCode::kShapeMismatch, "--input " + in.name + " is " +
                                                 it->second.type_string() +
                                                 ", but the model declares " + in.type.to_string());
    }
    out.push_back(&it->second);
  }
  for (const auto& [name, t] : given) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      throw Error(ErrorCode::kInvalidArgument,
                  "--input " + name + ": the model has no input of that name");
    }
  }
  return out;
}

class Bench {
 public:
  explicit Bench(const Options& o) : o_(o) {}

  int run() {
    if (o_.iters < 0 || o_.warmup < 0)
      throw Error(ErrorCode::kInvalidArgument, "--iters and --warmup must be >= 0");
    const CudaProbe probe = probe_cuda();
    if (probe.devices.empty()) {
      std::fprintf(stderr, "bench_model_latency: no CUDA device: %s\n", probe.reason.c_str());
      return 2;
    }
    j_["device"] = probe.devices.front().name;
    j_["model"] = o_.model;
    j_["precision"] = o_.precision;
    j_["mode"] = o_.mode;
    j_["skinny_prefetch_distance"] = o_.skinny_prefetch;
    try {
      measure();
    } catch (const std::exception& e) {
      j_["error"] = e.what();
      j_["stage"] = stage_;
      write_json();
      throw;
    }
    write_json();
    return 0;
  }

 private:
  void measure() {
    stage_ = "arguments";
    SessionOptions so{Device::kCuda};
    so.precision = parse_precision(o_.precision);
    if (o_.mode != "graph" && o_.mode != "eager") {
      throw Error(ErrorCode::kInvalidArgument,
                  "--mode must be graph or eager, not '" + o_.mode + "'");
    }
    so.mode = o_.mode == "graph" ? ExecutionMode::kGraph : ExecutionMode::kEager;
    if (o_.programmatic_launch != "on" && o_.programmatic_launch != "off") {
      throw Error(ErrorCode::kInvalidArgument,
                  "--programmatic-launch must be on or off, not '" + o_.programmatic_launch + "'");
    }
    so.programmatic_launch = o_.programmatic_launch == "on";
    if (o_.skinny_prefetch < 0) {
      throw Error(ErrorCode::kInvalidArgument, "--skinny-prefetch must be at least 0, not " +
                                                   std::to_string(o_.skinny_prefetch));
    }
    so.skinny_prefetch_distance = o_.skinny_prefetch;
    if (o_.early_setup != "on" && o_.early_setup != "off") {
      throw Error(ErrorCode::kInvalidArgument,
                  "--early-setup must be on or off, not '" + o_.early_setup + "'");
    }
    std::map<std::string, Tensor> given;
    for (const std::string& arg : o_.inputs) {
      const size_t eq = arg.find('=');
      if (eq == std::string::npos || eq == 0) {
        throw Error(ErrorCode::kInvalidArgument, "--input '" + arg + "': expected NAME=FILE.npy");
      }
      if (!given.emplace(arg.substr(0, eq), read_npy(arg.substr(eq + 1))).second) {
        throw Error(ErrorCode::kInvalidArgument,
                    "--input " + arg.substr(0, eq) + " is given twice");
      }
    }

    stage_ = "CUDA context";
    auto t0 = Clock::now();
    CK(cudaFree(nullptr));
    j_["context_s"] = seconds_since(t0);
    // cuBLASLt's set-up in the process goes on while the model loads, as in `graphfuse run`
    // (off: the compile starts it, and waits for what it has not done).
    if (o_.early_setup == "on") start_cuda_setup();
    j_["early_setup"] = o_.early_setup == "on";

    stage_ = "import";
    t0 = Clock::now();
    Graph graph = import_model(o_.model, given);
    j_["import_s"] = seconds_since(t0);
    const std::vector<const Tensor*> inputs = ordered_inputs(graph, given);
    for (size_t i = 0; i < inputs.size(); ++i) {
      j_["inputs"].push_back(
          {{"name", graph.value(graph.inputs()[i]).name}, {"type", inputs[i]->type_string()}});
    }

    stage_ = "compile";
    const fs::path cache_dir = codegen::nvrtc_options_from_environment().cache_dir;
    j_["kernel_cache"] = {{"dir", cache_dir.string()}, {"cubins_before", cached_cubins(cache_dir)}};
    t0 = Clock::now();
    const Session session(std::move(graph), so);
    std::vector<std::vector<int64_t>> dims;
    for (const Tensor* t : inputs) dims.push_back(t->dims());
    const DeviceProgram program(session, dims);
    const double program_s = seconds_since(t0);
    j_["stats"] = stats_json(program.stats());

    stage_ = "upload";
    std::vector<std::unique_ptr<DeviceBuffer>> in_buffers;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i]->dtype() != program.input_types()[i].dtype) {  // checked at import; a guard
        throw Error(ErrorCode::kShapeMismatch,
                    "input " + std::to_string(i) + " is " + inputs[i]->type_string() +
                        ", the program takes " + program.input_types()[i].to_string());
      }
      in_buffers.push_back(std::make_unique<DeviceBuffer>(inputs[i]->nbytes()));
      CK(cudaMemcpy(in_buffers.back()->get(), inputs[i]->raw(), inputs[i]->nbytes(),
                    cudaMemcpyHostToDevice));
    }
    auto run_out = poisoned_outputs(program);
    auto graph_out = poisoned_outputs(program);
    auto bindings = [&](const std::vector<std::unique_ptr<DeviceBuffer>>& out) {
      DeviceBindings b;
      for (const auto& p : in_buffers) b.inputs.push_back(p->get());
      for (const auto& p : out) b.outputs.push_back(p->get());
      return b;
    };
    const DeviceBindings run_bindings = bindings(run_out);
    // The copies and poisoning memsets above went on the legacy default stream, which the
    // non-blocking stream below does not wait for.
    CK(cudaDeviceSynchronize());
    cudaStream_t stream = nullptr;
    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

    stage_ = "first run";
    t0 = Clock::now();
    program.run(run_bindings, stream);
    CK(cudaStreamSynchronize(stream));
    const double first_run_s = seconds_since(t0);
    j_["compile_s"] = program_s + first_run_s;
    j_["session_and_program_s"] = program_s;
    j_["first_run_s"] = first_run_s;
    j_["kernel_cache"]["cubins_after"] = cached_cubins(cache_dir);

    stage_ = "device run";
    Events events;
    j_["run_us"] = summarize_us(
        events.time_us(stream, o_.warmup, o_.iters, [&] { program.run(run_bindings, stream); }));
    j_["outputs"] = json::array();
    const std::vector<std::string> run_files =
        write_outputs(program, run_out, o_.output_dir, "run");
    for (size_t i = 0; i < program.output_types().size(); ++i) {
      const Graph& g = session.graph();
      j_["outputs"].push_back({{"name", g.value(g.outputs()[i]).name},
                               {"type", program.output_types()[i].to_string()},
                               {"run_file", i < run_files.size() ? run_files[i] : ""}});
    }

    // A program with host steps cannot join a graph: that is reported, the rest kept.
    stage_ = "caller graph";
    try {
      caller_graph(program, bindings(graph_out), stream, events);
      const std::vector<std::string> files =
          write_outputs(program, graph_out, o_.output_dir, "caller_graph");
      for (size_t i = 0; i < files.size(); ++i) j_["outputs"][i]["caller_graph_file"] = files[i];
    } catch (const Error& e) {
      j_["caller_graph_error"] = e.what();
    }
    CK(cudaStreamDestroy(stream));
  }

  void caller_graph(const DeviceProgram& program, const DeviceBindings& b, cudaStream_t stream,
                    Events& events) {
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    const auto t0 = Clock::now();
    CK(cudaGraphCreate(&graph, 0));
    try {
      const GraphSegment seg = program.populate(graph, nullptr, 0, b);
      j_["caller_graph_nodes"] = seg.node_count;
      CK(cudaGraphInstantiate(&exec, graph, 0));
      j_["caller_graph_build_s"] = seconds_since(t0);
      j_["caller_graph_us"] = summarize_us(events.time_us(
          stream, std::max(o_.warmup, 1), o_.iters, [&] { CK(cudaGraphLaunch(exec, stream)); }));
      CK(cudaStreamSynchronize(stream));
    } catch (...) {
      if (exec) cudaGraphExecDestroy(exec);
      cudaGraphDestroy(graph);
      throw;
    }
    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(graph));
  }

  void write_json() const {
    if (o_.json_path.empty()) return;
    std::ofstream out(o_.json_path);
    out << j_.dump(2) << "\n";
    if (!out) throw Error(ErrorCode::kIoError, "cannot write '" + o_.json_path + "'");
  }

  const Options& o_;
  json j_;
  std::string stage_;
};

int bench_main(int argc, char** argv) {
  Options o;
  CLI::App app{"Device latency of an ONNX model on caller buffers (graphfuse DeviceProgram)",
               "bench_model_latency"};
  app.add_option("model", o.model, "the .onnx file")->required();
  app.add_option("--input", o.inputs, "NAME=FILE.npy, one for every model input (binds its shape)");
  app.add_option("--precision", o.precision,
                 "fp32, tf32, fp16 or bf16 (fp16/bf16 convert f32 compute)")
      ->capture_default_str();
  app.add_option("--mode", o.mode, "graph (the program as one CUDA graph) or eager")
      ->capture_default_str();
  app.add_option("--programmatic-launch", o.programmatic_launch,
                 "on: a kernel may start while the one before it finishes (graph mode, sm_90+)")
      ->capture_default_str();
  app.add_option("--early-setup", o.early_setup,
                 "on: cuBLASLt's one-time set-up starts before the import (off: in the compile)")
      ->capture_default_str();
  app.add_option("--skinny-prefetch", o.skinny_prefetch,
                 "skinny GEMM kernels move the weights of the skinny product this many later "
                 "towards L2 (0: none)")
      ->capture_default_str();
  app.add_option("--iters", o.iters, "timed runs per pass (0: compile, run once and write outputs)")
      ->capture_default_str();
  app.add_option("--warmup", o.warmup, "untimed runs before each pass")->capture_default_str();
  app.add_option("--output-dir", o.output_dir,
                 "write outputs as DIR/run/outK.npy and DIR/caller_graph/outK.npy");
  app.add_option("--json", o.json_path, "write the figures (and any error) as JSON");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return Bench(o).run();
}

}  // namespace
}  // namespace gf

int main(int argc, char** argv) {
  try {
    return gf::bench_main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_model_latency: error: %s\n", e.what());
    return 1;
  }
}
