// thread_error.h — sets the message te4j::lastThreadError() returns (api.cpp keeps it), for the
// free functions of libte4j outside api.cpp. Private to libte4j.
#pragma once

#include <string>

namespace te4j {

void setLastThreadError(const std::string& message);

}  // namespace te4j
