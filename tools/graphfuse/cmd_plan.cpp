// graphfuse plan: the fusion plan of a model — its kernels, the ops and ONNX node names in each,
// the cost-model numbers, and with --explain every fusion decision and why it was taken.
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "cli_util.h"
#include "commands.h"
#include "fusion/plan.h"
#include "graphfuse/models.h"
#include "passes/pipeline.h"

namespace gf::cli {

namespace {

struct PlanOptions {
  std::string model;
  std::vector<std::string> shapes;
  std::string target = "h200";
  bool explain = false;
  std::string dot, json, dump_after;
  std::vector<std::string> disabled;
};

Graph load_model(const PlanOptions& o) {
  if (o.model == "builtin:gpt2") {
    if (!o.shapes.empty()) throw Error(ErrorCode::kInvalidArgument, "--shape is for ONNX models");
    Graph g = models::gpt2_stack(models::Gpt2Config{});
    infer_shapes(g);
    return g;
  }
  OnnxImportOptions import_options;
  for (const std::string& s : o.shapes) {
    auto [name, dims] = parse_shape_binding(s, "--shape");
    if (!import_options.input_shapes.emplace(name, dims).second) {
      throw Error(ErrorCode::kInvalidArgument, "--shape " + name + " is given twice");
    }
  }
  return load_onnx_model(o.model, import_options);
}

int plan_model(const PlanOptions& o) {
  fusion::CostModel model;
  if (o.target == "h200") {
    model = fusion::CostModel::h200();
  } else if (o.target == "cpu") {
    model = fusion::CostModel::cpu();
  } else {
    throw Error(ErrorCode::kInvalidArgument, "--target must be h200 or cpu, got '" + o.target + "'");
  }
  Graph g = load_model(o);
  PassOptions passes;
  passes.dump_after = o.dump_after;
  passes.disabled = o.disabled;
  const PassReport report = run_passes(g, passes);
  const fusion::Plan plan = fusion::plan_fusion(g, model);
  if (o.explain) {
    // What each graph pass did before the plan, and what it cost.
    std::printf("passes: %zu nodes in\n", report.nodes_before);
    for (const PassRecord& r : report.passes) {
      std::printf("  %-22s %4d changes, %5zu nodes after, %8.3f ms\n", r.name.c_str(), r.changes,
                  r.nodes_after, r.seconds * 1e3);
    }
  }
  std::printf("%s", fusion::plan_to_text(g, plan, o.explain).c_str());
  if (!o.json.empty()) write_text_file(o.json, fusion::plan_to_json(g, plan));
  if (!o.dot.empty()) {
    write_text_file(o.dot, fusion::plan_to_dot(g, plan));
    // A picture too, when Graphviz is installed.
    if (std::system("command -v dot >/dev/null 2>&1") == 0) {
      const std::string svg = o.dot + ".svg";
      const std::string cmd = "dot -Tsvg '" + o.dot + "' -o '" + svg + "'";
      if (o.dot.find('\'') == std::string::npos && std::system(cmd.c_str()) == 0) {
        std::printf("wrote %s and %s\n", o.dot.c_str(), svg.c_str());
        return 0;
      }
    }
    std::printf("wrote %s\n", o.dot.c_str());
  }
  return 0;
}

}  // namespace

void add_plan_command(CLI::App& app, std::vector<Command>& commands) {
  auto o = std::make_shared<PlanOptions>();
  CLI::App* sub = app.add_subcommand("plan", "Show how a model is fused into kernels, and why");
  sub->add_option("model", o->model, "an ONNX file, or builtin:gpt2 for the demo model")->required();
  sub->add_option("--shape", o->shapes, "bind an input's dims: NAME=1x128 (repeatable)");
  sub->add_option("--target", o->target, "cost model: h200 or cpu")->capture_default_str();
  sub->add_flag("--explain", o->explain, "list the nodes of each kernel and every fusion decision");
  sub->add_option("--dot", o->dot, "write a Graphviz picture of the plan (and FILE.svg with dot)");
  sub->add_option("--json", o->json, "write the plan as JSON, with a top-level kernel_count");
  std::string names;
  for (const std::string& n : pass_names()) names += (names.empty() ? "" : ", ") + n;
  sub->add_option("--dump-after", o->dump_after, "print the graph to stderr after this pass: " + names);
  sub->add_option("--disable-pass", o->disabled, "leave this pass out (repeatable)");
  commands.push_back({sub, [o] { return plan_model(*o); }});
}

}  // namespace gf::cli
