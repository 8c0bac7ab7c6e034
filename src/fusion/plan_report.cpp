// Human- and machine-readable views of a fusion plan.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "fusion/plan.h"

namespace gf::fusion {

namespace {

std::string fmt_bytes(double b) {
  char buf[32];
  if (b >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.2f MB", b / 1e6);
  } else if (b >= 1e3) {
    std::snprintf(buf, sizeof buf, "%.1f kB", b / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f B", b);
  }
  return buf;
}

std::string group_ops(const Graph& g, const Group& gr) {
  std::string s;
  for (NodeId id : gr.nodes) s += (s.empty() ? "" : " ") + std::string(op_name(g.node(id).op));
  return s;
}

}  // namespace

std::string plan_to_text(const Graph& g, const Plan& plan, bool explain) {
  std::ostringstream os;
  char line[256];
  std::snprintf(line, sizeof line, "plan for %s on %s: %zu nodes -> %d kernels, est. %.1f us\n",
                g.name.c_str(), plan.model.target.c_str(), g.num_nodes(), plan.kernel_count(),
                plan.total_time_us());
  os << line;
  for (const Group& gr : plan.groups) {
    std::snprintf(line, sizeof line, "  #%-3d %-9s %8.2f us  read %s, write %s, %.3g flop: ",
                  gr.id, std::string(group_kind_name(gr.kind)).c_str(), gr.time_us,
                  fmt_bytes(gr.bytes_read).c_str(), fmt_bytes(gr.bytes_written).c_str(),
                  gr.flops + gr.matrix_flops);
    os << line << group_ops(g, gr) << "\n";
    if (explain) {
      os << "        nodes:";
      for (NodeId id : gr.nodes) os << " " << g.node(id).name;
      os << "\n";
    }
  }
  if (explain) {
    os << "decisions:\n";
    for (const Decision& d : plan.decisions) {
      std::snprintf(line, sizeof line, "  %-5s %-10s %s %s / %.2f us: ",
                    d.accepted ? "fused" : "kept", d.kind.c_str(),
                    d.accepted ? "saves" : "would save", fmt_bytes(d.bytes_saved).c_str(),
                    d.time_saved_us);
      os << line << d.producer << (d.consumer.empty() ? "" : " -> " + d.consumer) << " (" << d.reason
         << ")\n";
    }
  }
  return os.str();
}

std::string plan_to_dot(const Graph& g, const Plan& plan) {
  std::ostringstream os;
  os << "digraph plan {\n  rankdir=TB;\n  node [shape=box, fontsize=10];\n";
  auto quoted = [](const std::string& s) {
    std::string q = "\"";
    for (char c : s) q += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
    return q + "\"";
  };
  for (const Group& gr : plan.groups) {
    os << "  subgraph cluster_" << gr.id << " {\n    label=" << quoted("#" + std::to_string(gr.id) + " " + std::string(group_kind_name(gr.kind)))
       << ";\n    style=" << (gr.launches_kernel() ? "solid" : "dashed") << ";\n";
    for (NodeId id : gr.nodes) {
      const Node& n = g.node(id);
      os << "    n" << id << " [label=" << quoted(std::string(op_name(n.op)) + "\\n" + n.name) << "];\n";
    }
    os << "  }\n";
  }
  for (NodeId id = 0; id < static_cast<NodeId>(g.num_nodes()); ++id) {
    for (ValueId v : g.node(id).inputs) {
      if (v == kNoValue || g.value(v).producer == kNoNode) continue;
      os << "  n" << g.value(v).producer << " -> n" << id << ";\n";
    }
  }
  os << "}\n";
  return os.str();
}

std::string plan_to_json(const Graph& g, const Plan& plan) {
  nlohmann::json j;
  j["model"] = g.name;
  j["target"] = plan.model.target;
  j["node_count"] = g.num_nodes();
  j["kernel_count"] = plan.kernel_count();
  j["estimated_time_us"] = plan.total_time_us();
  j["groups"] = nlohmann::json::array();
  for (const Group& gr : plan.groups) {
    nlohmann::json jg;
    jg["id"] = gr.id;
    jg["kind"] = std::string(group_kind_name(gr.kind));
    jg["launches_kernel"] = gr.launches_kernel();
    for (NodeId id : gr.nodes) {
      jg["ops"].push_back(std::string(op_name(g.node(id).op)));
      jg["nodes"].push_back(g.node(id).name);
    }
    jg["bytes_read"] = gr.bytes_read;
    jg["bytes_written"] = gr.bytes_written;
    jg["flops"] = gr.flops;
    jg["matrix_flops"] = gr.matrix_flops;
    jg["time_us"] = gr.time_us;
    j["groups"].push_back(jg);
  }
  j["decisions"] = nlohmann::json::array();
  for (const Decision& d : plan.decisions) {
    j["decisions"].push_back({{"kind", d.kind}, {"producer", d.producer}, {"consumer", d.consumer},
                              {"accepted", d.accepted}, {"reason", d.reason},
                              {"bytes_saved", d.bytes_saved}, {"time_saved_us", d.time_saved_us}});
  }
  return j.dump(1);
}

}  // namespace gf::fusion
