// unavailable.h — null objects for what cannot exist here. Each returns a heap object whose
// status() is `status` and whose every call fails with `why`; nullptr only when memory is out.
#pragma once

#include <string>

#include "te4j/api.h"

namespace te4j {

/// A P2pTransport of `platform` that cannot be used.
P2pTransport* newUnavailableP2pTransport(int platform, int status, const std::string& why);

/// An OpStream of `platform` that cannot run anything.
OpStream* newUnavailableOpStream(int platform, int status, const std::string& why);

}  // namespace te4j
