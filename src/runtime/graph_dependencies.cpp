// command_dependencies: one pass over the commands with the last writer and the readers since
// of every buffer.
#include "runtime/graph_dependencies.h"

#include <algorithm>
#include <unordered_map>

namespace gf {

std::vector<std::vector<int>> command_dependencies(const std::vector<CommandBuffers>& commands) {
  struct BufferState {
    int last_writer = -1;
    std::vector<int> readers_since;  // readers after last_writer
  };
  std::unordered_map<int64_t, BufferState> buffers;
  std::vector<std::vector<int>> deps(commands.size());
  for (size_t i = 0; i < commands.size(); ++i) {
    const int self = static_cast<int>(i);
    std::vector<int>& d = deps[i];
    for (int64_t b : commands[i].reads) {
      const BufferState& s = buffers[b];
      if (s.last_writer >= 0) d.push_back(s.last_writer);
    }
    for (int64_t b : commands[i].writes) {
      const BufferState& s = buffers[b];
      if (s.last_writer >= 0) d.push_back(s.last_writer);
      d.insert(d.end(), s.readers_since.begin(), s.readers_since.end());
    }
    std::sort(d.begin(), d.end());
    d.erase(std::unique(d.begin(), d.end()), d.end());
    d.erase(std::remove(d.begin(), d.end(), self), d.end());  // a command reading what it writes
    for (int64_t b : commands[i].reads) {
      std::vector<int>& r = buffers[b].readers_since;
      if (r.empty() || r.back() != self) r.push_back(self);
    }
    for (int64_t b : commands[i].writes) {
      BufferState& s = buffers[b];
      s.last_writer = self;
      s.readers_since.clear();
    }
  }
  return deps;
}

}  // namespace gf
