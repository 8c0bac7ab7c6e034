// A fusion plan: the graph's nodes partitioned into groups, each one kernel (or none, for
// views), with the decisions that formed them and their cost-model numbers.
#pragma once

#include <string>
#include <vector>

#include "fusion/cost_model.h"
#include "graphfuse/graph.h"

namespace gf::fusion {

enum class GroupKind {
  kPointwise,  // elementwise/broadcast/injective ops over one iteration space
  kReduction,  // reduction or normalization rows, with pointwise prologue/epilogue
  kGemm,       // MatMul/Gemm/Conv with a pointwise epilogue
  kAttention,  // the fused attention op with a pointwise epilogue
  kView,       // only reshapes/transposes/splits that consumers read as strided views: no kernel
  kOpaque,     // shape producers and everything that does not fuse
};

std::string_view group_kind_name(GroupKind kind);

struct Group {
  int id = 0;
  GroupKind kind = GroupKind::kPointwise;
  NodeId anchor = kNoNode;       // the reduction/GEMM/attention node, if any
  std::vector<NodeId> nodes;     // in topological order
  std::vector<ValueId> inputs;   // values read from outside the group (graph inputs, constants)
  std::vector<ValueId> outputs;  // values read outside the group or graph outputs
  double bytes_read = 0;
  double bytes_written = 0;
  double flops = 0;         // vector arithmetic
  double matrix_flops = 0;  // on the matrix units (the GEMM/conv/attention anchor)
  double time_us = 0;  // cost model estimate, launch included
  bool launches_kernel() const { return kind != GroupKind::kView; }
};

struct Decision {
  std::string kind;       // "epilogue", "prologue", "pointwise", "horizontal", "view"
  std::string producer;   // node names, for the reader
  std::string consumer;
  bool accepted = false;
  std::string reason;     // why accepted or refused
  double bytes_saved = 0;
  double time_saved_us = 0;
};

struct Plan {
  CostModel model;
  std::vector<Group> groups;  // in an order where producers come first
  std::vector<Decision> decisions;
  int kernel_count() const;
  double total_time_us() const;
  // Index into groups of the group holding each node.
  std::vector<int> group_of_node;
};

// Partitions `g` (shape-inferred) into fusion groups by op kinds and the cost model.
Plan plan_fusion(const Graph& g, const CostModel& model);

// Reports: a readable listing (with every decision when `explain`), Graphviz, JSON.
std::string plan_to_text(const Graph& g, const Plan& plan, bool explain);
std::string plan_to_dot(const Graph& g, const Plan& plan);
std::string plan_to_json(const Graph& g, const Plan& plan);

}  // namespace gf::fusion
