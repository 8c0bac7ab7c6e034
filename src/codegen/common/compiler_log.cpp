#include "codegen/common/compiler_log.h"

#include <sstream>
#include <vector>

namespace gf::codegen {

std::string first_error_lines(const std::string& log, int max_lines) {
  std::istringstream in(log);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  size_t first = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find("error") != std::string::npos) {
      first = i;
      break;
    }
  }
  std::string shown;
  for (size_t i = first; i < lines.size() && i < first + static_cast<size_t>(max_lines); ++i) {
    shown += "\n  " + lines[i];
  }
  return shown;
}

}  // namespace gf::codegen
