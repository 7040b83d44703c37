// device_error_records.h — the error records device code leaves failed posts in
// (transport/device/ibgda/error_record.cuh), known to the op streams that report them.
//
// Each RdmaTransport owns one record in host-visible control memory and registers it here with
// the platform and device its QPs live on. An op stream's synchronize() takes (reads and
// clears) the records of its device, so a failure the void upstream-style functions could not
// return surfaces at the next synchronize on that device, from whichever stream gets there
// first. Private to libte4j.
#pragma once

#include <string>

namespace mooncake {
namespace device {
struct McErrorRecord;
}
}  // namespace mooncake

namespace te4j {

void registerErrorRecord(int platform, int device, mooncake::device::McErrorRecord* host_view);
void unregisterErrorRecord(mooncake::device::McErrorRecord* host_view);

/// The failures recorded on (platform, device) since the last call, as one message naming the
/// first failure and the count, or "" when there were none. Clears the records it read.
std::string takeDeviceErrors(int platform, int device);

}  // namespace te4j
