// Dependency edges between the commands of a program, from the buffers each reads and writes:
// a command waits for the last writer of what it reads (read after write), and for the last
// writer and the readers since of what it writes (write after write, write after read). Other
// pairs may run concurrently, which a CUDA graph does when it is given these edges and no more.
#pragma once

#include <cstdint>
#include <vector>

namespace gf {

struct CommandBuffers {
  std::vector<int64_t> reads;   // buffer ids (any numbering: values, arena slots)
  std::vector<int64_t> writes;
};

// For each command, the earlier commands it must wait for (sorted, no duplicates). Edges implied
// by others through one intermediate command are kept: graphs accept them, and removing them
// all would cost a transitive reduction per build.
std::vector<std::vector<int>> command_dependencies(const std::vector<CommandBuffers>& commands);

}  // namespace gf
