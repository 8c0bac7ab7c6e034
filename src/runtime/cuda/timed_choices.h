// Choices made by timing at compile time (which attention path, which cuBLASLt algorithm), kept
// on disk beside the kernel cache so that a later process times nothing: one small file per
// choice, "<kind>_<hash of key>.choice", holding the value, a newline, then the key (which guards
// against a hash collision). The key must name everything the times depend on (the call, the
// device, the libraries' versions). Nothing is read or written when the NVRTC cache has its disk
// cache off; a file that cannot be written costs a timing in the next process, nothing else.
#pragma once

#include <optional>
#include <string>

namespace gf::cuda {

std::optional<std::string> stored_choice(const std::string& kind, const std::string& key);
void store_choice(const std::string& kind, const std::string& key, const std::string& value);

}  // namespace gf::cuda
