// module_errors.h — the per-thread message behind te4j::moduleLastError(), shared by the files
// of te4j/module_api.h (nvrtc_compiler.cpp, the CUDA module code and its host-only stand-in).
#pragma once

#include <string>

namespace te4j {

/// Keeps `message` for moduleLastError() on this thread and returns `status`.
int moduleFail(int status, const std::string& message);

}  // namespace te4j
