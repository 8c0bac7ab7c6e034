// graphfuse run: imports an ONNX model, runs it on given or random inputs, reports latency and
// writes the outputs as .npy files.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>

#include "cli_util.h"
#include "commands.h"
#include "graphfuse/device.h"
#include "graphfuse/npy.h"
#include "graphfuse/session.h"

namespace gf::cli {

namespace {

struct RunOptions {
  std::string model;
  std::vector<std::string> shapes, inputs;
  std::string output_dir, device = "cpu", json, cpu_backend = "fused", dump_after,
                          precision = "fp32", mode = "graph", skinny_gemm = "auto",
                          attention = "auto", gemm_library = "auto";
  std::vector<std::string> disabled_passes;
  std::string programmatic_launch = "on";
  std::string intermediates = "rounded";
  int iterations = 10;
  int skinny_prefetch = SessionOptions{}.skinny_prefetch_distance;
};

std::string compile_seconds_json(const CompileSeconds& c) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "{\"passes\": %.6f, \"steps\": %.6f, \"libraries\": %.6f, \"kernels\": %.6f, "
                "\"memory\": %.6f, \"weights\": %.6f, "
                "\"graph\": %.6f, \"total\": %.6f}",
                c.passes, c.steps, c.libraries, c.kernels, c.memory, c.weights, c.graph, c.total);
  return buf;
}

struct Latency {
  double min = 0, median = 0, p90 = 0;
};

Latency summarize(std::vector<double> us) {
  std::sort(us.begin(), us.end());
  auto at = [&](double q) {
    return us[std::min(us.size() - 1,
                       static_cast<size_t>(q * static_cast<double>(us.size() - 1) + 0.5))];
  };
  return {us.front(), at(0.5), at(0.9)};
}

int run_model(const RunOptions& o) {
  if (o.iterations < 1) throw Error(ErrorCode::kInvalidArgument, "--iterations must be at least 1");
  if (o.device != "cpu" && o.device != "cuda") {
    throw Error(ErrorCode::kInvalidArgument,
                "--device must be cpu or cuda, got '" + o.device + "'");
  }
  if (o.cpu_backend != "fused" && o.cpu_backend != "reference") {
    throw Error(ErrorCode::kInvalidArgument,
                "--cpu-backend must be fused or reference, got '" + o.cpu_backend + "'");
  }
  const Precision precision = parse_precision(o.precision, o.device);
  OnnxImportOptions import_options;
  for (const std::string& s : o.shapes) {
    auto [name, dims] = parse_shape_binding(s, "--shape");
    if (!import_options.input_shapes.emplace(name, dims).second) {
      throw Error(ErrorCode::kInvalidArgument, "--shape " + name + " is given twice");
    }
  }
  // Inputs read from files also bind their shapes, so shape subgraphs fold.
  std::map<std::string, Tensor> given;
  for (const std::string& s : o.inputs) {
    auto [name, path] = parse_name_value(s, "--input");
    Tensor t = read_npy(path);
    import_options.input_shapes.emplace(name, t.dims());
    if (!given.emplace(name, std::move(t)).second) {
      throw Error(ErrorCode::kInvalidArgument, "--input " + name + " is given twice");
    }
  }
  // The process's CUDA set-up (context, cuBLASLt) goes on while the model loads.
  if (o.device == "cuda") start_cuda_setup();
  Graph graph = load_model(o.model, import_options);

  std::map<std::string, Tensor> inputs;
  uint32_t seed = 1;
  for (ValueId v : graph.inputs()) {
    const Value& in = graph.value(v);
    auto it = given.find(in.name);
    if (it != given.end()) {
      inputs.emplace(in.name, it->second);
      continue;
    }
    auto bound = import_options.input_shapes.find(in.name);
    if (!in.type.shape.is_static() && bound != import_options.input_shapes.end()) {
      // A built-in model's dims are bound here (an ONNX model's were at import).
      if (bound->second.size() != in.type.shape.rank()) {
        throw Error(ErrorCode::kInvalidArgument,
                    "--shape " + in.name + " has rank " + std::to_string(bound->second.size()) +
                        ", but '" + in.name + "' is declared " + in.type.to_string());
      }
      inputs.emplace(
          in.name,
          random_tensor(TensorType{in.type.dtype, Shape::from_static(bound->second)}, seed++));
      continue;
    }
    if (!in.type.shape.is_static()) {
      throw Error(ErrorCode::kInvalidArgument,
                  "input '" + in.name + "' has dynamic shape " + in.type.to_string() +
                      "; give --shape " + in.name + "=DIMS or --input " + in.name + "=FILE.npy");
    }
    inputs.emplace(in.name, random_tensor(in.type, seed++));
  }

  SessionOptions session_options;
  session_options.device = o.device == "cuda" ? Device::kCuda : Device::kCpu;
  session_options.cpu_backend =
      o.cpu_backend == "fused" ? CpuBackend::kFused : CpuBackend::kReference;
  session_options.dump_after_pass = o.dump_after;
  session_options.disabled_passes = o.disabled_passes;
  session_options.precision = precision;
  if (o.mode != "graph" && o.mode != "eager") {
    throw Error(ErrorCode::kInvalidArgument, "--mode must be eager or graph, not '" + o.mode + "'");
  }
  session_options.mode = o.mode == "graph" ? ExecutionMode::kGraph : ExecutionMode::kEager;
  if (o.programmatic_launch != "on" && o.programmatic_launch != "off") {
    throw Error(ErrorCode::kInvalidArgument,
                "--programmatic-launch must be on or off, not '" + o.programmatic_launch + "'");
  }
  session_options.programmatic_launch = o.programmatic_launch == "on";
  const std::optional<SkinnyGemm> skinny_gemm = skinny_gemm_from_name(o.skinny_gemm);
  if (!skinny_gemm) {
    throw Error(ErrorCode::kInvalidArgument,
                "--skinny-gemm must be auto, always or off, not '" + o.skinny_gemm + "'");
  }
  session_options.skinny_gemm = *skinny_gemm;
  if (o.skinny_prefetch < 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "--skinny-prefetch must be at least 0, not " + std::to_string(o.skinny_prefetch));
  }
  session_options.skinny_prefetch_distance = o.skinny_prefetch;
  const std::optional<AttentionPath> attention = attention_path_from_name(o.attention);
  if (!attention) {
    throw Error(ErrorCode::kInvalidArgument,
                "--attention must be auto, generated or cudnn, not '" + o.attention + "'");
  }
  session_options.attention = *attention;
  const std::optional<GemmLibrary> gemm_library = gemm_library_from_name(o.gemm_library);
  if (!gemm_library) {
    throw Error(ErrorCode::kInvalidArgument,
                "--gemm-library must be auto, cublaslt, cudnn, timed or generated, not '" +
                    o.gemm_library + "'");
  }
  session_options.gemm_library = *gemm_library;
  if (o.intermediates != "rounded" && o.intermediates != "f32") {
    throw Error(ErrorCode::kInvalidArgument,
                "--intermediates must be rounded or f32, not '" + o.intermediates + "'");
  }
  session_options.round_16bit_intermediates = o.intermediates == "rounded";
  Session session(std::move(graph), session_options);
  std::map<std::string, Tensor> outputs = session.run_named(inputs);  // warm-up, also checks inputs
  std::vector<double> times_us;
  for (int i = 0; i < o.iterations; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    outputs = session.run_named(inputs);
    times_us.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  const Latency lat = summarize(times_us);

  if (!o.output_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.output_dir, ec);
    if (ec)
      throw Error(ErrorCode::kIoError, "cannot create '" + o.output_dir + "': " + ec.message());
  }
  std::string json_outputs;
  for (ValueId v : session.graph().outputs()) {
    const std::string& name = session.graph().value(v).name;
    const Tensor& t = outputs.at(name);
    std::printf("output %s: %s\n", name.c_str(), t.type_string().c_str());
    if (!o.output_dir.empty())
      write_npy((std::filesystem::path(o.output_dir) / (file_name_for(name) + ".npy")).string(), t);
    json_outputs +=
        (json_outputs.empty() ? "" : ", ") + json_string(name) + ": " + json_dims(t.dims());
  }
  std::printf("latency over %d runs: min %.1f us, median %.1f us, p90 %.1f us\n", o.iterations,
              lat.min, lat.median, lat.p90);
  if (!o.json.empty()) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "{\"min\": %.3f, \"median\": %.3f, \"p90\": %.3f}", lat.min,
                  lat.median, lat.p90);
    const SessionStats st = session.stats();
    const std::string stats =
        "{\"cpu_backend\": " + json_string(o.cpu_backend) +
        ", \"precision\": " + json_string(o.precision) +
        ", \"mode\": " + json_string(o.device == "cuda" ? o.mode : "cpu") +
        ", \"graph_nodes\": " + std::to_string(st.graph_nodes) +
        ", \"programmatic_edges\": " + std::to_string(st.programmatic_edges) +
        ", \"compile_seconds\": " + compile_seconds_json(st.compile_seconds) +
        ", \"fused_kernels\": " + std::to_string(st.fused_kernels) +
        ", \"library_calls\": " + std::to_string(st.library_calls) +
        ", \"skinny_gemm_steps\": " + std::to_string(st.skinny_gemm_steps) +
        ", \"cudnn_attention_steps\": " + std::to_string(st.cudnn_attention_steps) +
        ", \"cudnn_gemm_steps\": " + std::to_string(st.cudnn_gemm_steps) +
        ", \"tensor_core_gemm_steps\": " + std::to_string(st.tensor_core_gemm_steps) +
        ", \"tuned_gemms\": " + std::to_string(st.tuned_gemms) +
        ", \"direct_bindings\": " + std::to_string(st.direct_bindings) +
        ", \"arena_bytes\": " + std::to_string(st.arena_bytes) +
        ", \"arena_lower_bound\": " + std::to_string(st.arena_lower_bound) +
        ", \"reference_steps\": " + std::to_string(st.reference_steps) +
        ", \"fallback_nodes\": " + std::to_string(st.fallback_nodes) +
        ", \"fallback_reasons\": " + json_strings(st.fallback_reasons) +
        ", \"programs_compiled\": " + std::to_string(st.programs_compiled) +
        ", \"program_cache_hits\": " + std::to_string(st.program_cache_hits) +
        ", \"program_cache_misses\": " + std::to_string(st.program_cache_misses) +
        ", \"program_evictions\": " + std::to_string(st.program_evictions) +
        ", \"cuda_graph_programs\": " + std::to_string(st.cuda_graph_programs) +
        ", \"cached_programs\": " + std::to_string(st.cached_programs) +
        ", \"cached_program_bytes\": " + std::to_string(st.cached_program_bytes) +
        ", \"shared_arena_bytes\": " + std::to_string(st.shared_arena_bytes) +
        ", \"padded_runs\": " + std::to_string(st.padded_runs) + "}";
    write_text_file(
        o.json, "{\"model\": " + json_string(o.model) + ", \"device\": " + json_string(o.device) +
                    ", \"stats\": " + stats + ", \"iterations\": " + std::to_string(o.iterations) +
                    ", \"latency_us\": " + buf + ", \"outputs\": {" + json_outputs + "}}\n");
  }
  return 0;
}

}  // namespace

void add_run_command(CLI::App& app, std::vector<Command>& commands) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* sub = app.add_subcommand("run", "Run an ONNX model on given or random inputs");
  sub->add_option("model", o->model,
                  "the .onnx file, or builtin:gpt2 (the demo model; bind x with --shape)")
      ->required();
  sub->add_option("--shape", o->shapes, "NAME=DIMS, e.g. input_ids=1x128 (binds dynamic dims)");
  sub->add_option("--input", o->inputs, "NAME=FILE.npy (random data for inputs not given)");
  sub->add_option("--output-dir", o->output_dir, "write each output as DIR/NAME.npy");
  sub->add_option("--device", o->device, "cpu or cuda")->capture_default_str();
  sub->add_option("--precision", o->precision, "fp32, tf32, fp16 or bf16 (the last three for cuda)")
      ->capture_default_str();
  sub->add_option("--mode", o->mode, "graph (one CUDA graph per run) or eager (cuda)")
      ->capture_default_str();
  sub->add_option(
         "--programmatic-launch", o->programmatic_launch,
         "on: in graph mode a kernel may start while the one before it finishes (cuda, sm_90+)")
      ->capture_default_str();
  sub->add_option(
         "--skinny-gemm", o->skinny_gemm,
         "auto: skinny GEMM kernels where they measured faster than cuBLASLt; always: for every "
         "GEMM of 1..16 rows; off: cuBLASLt for all (cuda)")
      ->capture_default_str();
  sub->add_option("--skinny-prefetch", o->skinny_prefetch,
                  "each skinny GEMM kernel moves the weights of the skinny product this many later "
                  "towards L2; 0: none (cuda)")
      ->capture_default_str();
  sub->add_option(
         "--attention", o->attention,
         "auto: cuDNN's fused attention where it timed faster than ours (large f16/bf16 attention "
         "without a mask); generated: ours only; cudnn: cuDNN wherever it takes the node (cuda)")
      ->capture_default_str();
  sub->add_option(
         "--gemm-library", o->gemm_library,
         "auto: cuBLASLt, but our tensor-core GEMM for a product followed by an exact GELU, fused "
         "into its kernel (sm_90 only); cublaslt: cuBLASLt for the products; cudnn: cuDNN's fused "
         "matmul wherever it takes one (an exact GELU included); timed: cuDNN for an exact GELU, "
         "elsewhere the faster of the two per shape (cuDNN's plans add about 0.3 s each to every "
         "compile); generated: our tensor-core GEMM with the epilogue fused wherever it takes the "
         "product (sm_90 only), cuBLASLt elsewhere (cuda)")
      ->capture_default_str();
  sub->add_option(
         "--intermediates", o->intermediates,
         "rounded: a generated kernel rounds each f16/bf16 op's result, as the graph says; f32: "
         "keeps f32 between the ops of a kernel, rounding only what it stores (cuda)")
      ->capture_default_str();
  sub->add_option("--cpu-backend", o->cpu_backend,
                  "fused (generated kernels) or reference (the interpreter)")
      ->capture_default_str();
  sub->add_option("--dump-after", o->dump_after,
                  "print the graph to stderr after this pass (see plan --help)");
  sub->add_option("--disable-pass", o->disabled_passes, "leave this graph pass out (repeatable)");
  sub->add_option("--iterations", o->iterations, "timed runs after one warm-up")
      ->capture_default_str();
  sub->add_option("--json", o->json, "write latency and output shapes as JSON");
  commands.push_back({sub, [o] { return run_model(*o); }});
}

}  // namespace gf::cli
