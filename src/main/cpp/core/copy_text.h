// copy_text.h — a reason string into a caller's fixed char buffer, the way the API's entry points
// that decode peer bytes (handles, RDMA metadata) hand their "why" back through JNI.
#pragma once

#include <cstring>
#include <string>

namespace te4j {

/// Copies as much of text as fits in out[capacity], always NUL-terminated; nothing when out is
/// null or capacity is not positive.
inline void copyText(const std::string& text, char* out, int capacity) {
  if (out == nullptr || capacity <= 0) return;
  const std::size_t room = static_cast<std::size_t>(capacity) - 1;
  const std::size_t n = text.size() < room ? text.size() : room;
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

}  // namespace te4j
