#include <sstream>

#include "graphfuse/graph.h"

namespace gf {

std::string print_graph(const Graph& g) {
  std::ostringstream os;
  os << "graph " << (g.name.empty() ? "model" : g.name) << " {\n";
  for (ValueId v : g.inputs()) {
    os << "  input %" << g.value(v).name << ": " << g.value(v).type.to_string() << "\n";
  }
  size_t constants = 0, constant_bytes = 0;
  for (size_t v = 0; v < g.num_values(); ++v) {
    const Value& val = g.value(static_cast<ValueId>(v));
    if (!val.is_constant()) continue;
    ++constants;
    constant_bytes += val.constant.nbytes();
  }
  if (constants) {
    os << "  # " << constants << " constants, " << constant_bytes << " bytes\n";
  }
  for (NodeId id : g.topological_order()) {
    const Node& n = g.node(id);
    os << "  ";
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      const Value& out = g.value(n.outputs[i]);
      os << (i ? ", " : "") << "%" << out.name << ": " << out.type.to_string();
    }
    os << " = " << op_name(n.op) << "(";
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      os << (i ? ", " : "");
      if (n.inputs[i] == kNoValue) {
        os << "<none>";
      } else {
        const Value& in = g.value(n.inputs[i]);
        os << (in.is_constant() ? "$" : "%") << in.name;
      }
    }
    os << ")";
    if (!n.attrs.empty()) {
      os << " {";
      bool first = true;
      for (const auto& [k, a] : n.attrs.items()) {
        os << (first ? "" : ", ") << k << "=" << attribute_to_string(a);
        first = false;
      }
      os << "}";
    }
    os << "  # " << n.name << "\n";
  }
  os << "  return";
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    os << (i ? ", %" : " %") << g.value(g.outputs()[i]).name;
  }
  os << "\n}\n";
  return os.str();
}

}  // namespace gf
