// The library calls of a flat segment that use a caller's buffer in place
// (program_bindings.h): finding the nodes a capture added, in an order two captures of one call
// share, and moving those nodes of an instantiated graph to a new capture's parameters.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "graphfuse/graph.h"
#include "runtime/cuda/cuda_program_graph.h"

namespace gf::cuda {

struct CudaProgramState;

// Throws kDeviceError "<call> failed: <error name> (<description>)" unless `e` is success (and
// clears the runtime's last error).
void check_rt(cudaError_t e, const std::string& call);

// Every node of `graph`.
std::vector<CUgraphNode> graph_nodes(CUgraph graph);

// The nodes of one captured library call in an order that two captures of the same call share:
// by depth within the set, then node type, then kernel function.
std::vector<CUgraphNode> ordered_nodes(std::vector<CUgraphNode> nodes);

// Captures the library steps on directly bound buffers (ProgramBindings::rebound_steps) again,
// bound by `bound`, and gives their nodes in `exec` (rebinding.library_nodes) the new capture's
// parameters. Throws kDeviceError naming the step when a capture's nodes do not pair with the
// graph's, kUnsupported for a node kind that cannot be updated in place.
void recapture_library_steps(CUgraphExec exec, const SegmentRebinding& rebinding, const Graph& g,
                             const CudaProgramState& st, const BoundAddresses& bound);

}  // namespace gf::cuda
