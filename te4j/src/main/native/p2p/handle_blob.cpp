// handle_blob.cpp — the common handle header: host identity, writing and strict checking.
#include "handle_blob.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <mutex>
#include <sstream>

#include "te4j/api.h"

namespace te4j {
namespace blob {
namespace {

std::string readFirstLine(const char* path) {
  std::ifstream in(path);
  std::string line;
  if (in) std::getline(in, line);
  return line;
}

std::string readLink(const char* path) {
  char buf[256];
  const ssize_t n = ::readlink(path, buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

// FNV-1a, 64 bits; two different offset bases give the 128 bits of the identity.
uint64_t fnv1a(const std::string& text, uint64_t basis) {
  uint64_t h = basis;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08x", v);
  return buf;
}

}  // namespace

const uint32_t* hostIdentity() {
  static uint32_t words[kHostIdInts];
  static std::once_flag once;
  std::call_once(once, [] {
    std::string source = readFirstLine("/proc/sys/kernel/random/boot_id");
    if (source.empty()) {
      char name[256] = {0};
      if (::gethostname(name, sizeof(name) - 1) == 0) source = std::string("host:") + name;
    }
    // Processes in different pid namespaces cannot reach each other through /proc/<pid>.
    source += "|" + readLink("/proc/self/ns/pid");
    const uint64_t a = fnv1a(source, 0xcbf29ce484222325ull);
    const uint64_t b = fnv1a(source, 0x84222325cbf29ce4ull);
    words[0] = static_cast<uint32_t>(a);
    words[1] = static_cast<uint32_t>(a >> 32);
    words[2] = static_cast<uint32_t>(b);
    words[3] = static_cast<uint32_t>(b >> 32);
  });
  return words;
}

void writeHeader(int32_t* blob, int platform, uint64_t bytes) {
  blob[kMagicAt] = kMagic;
  blob[kVersionAt] = kVersion;
  blob[kPlatformAt] = platform;
  blob[kPidAt] = static_cast<int32_t>(::getpid());
  blob[kSizeLoAt] = static_cast<int32_t>(static_cast<uint32_t>(bytes));
  blob[kSizeHiAt] = static_cast<int32_t>(static_cast<uint32_t>(bytes >> 32));
  const uint32_t* id = hostIdentity();
  for (int i = 0; i < kHostIdInts; ++i) blob[kHostIdAt + i] = static_cast<int32_t>(id[i]);
}

uint64_t sizeOf(const int32_t* blob) {
  return static_cast<uint64_t>(static_cast<uint32_t>(blob[kSizeLoAt])) |
         (static_cast<uint64_t>(static_cast<uint32_t>(blob[kSizeHiAt])) << 32);
}

int checkHeader(const int32_t* blob, int platform, int rank, uint64_t expected_bytes,
                std::string* why) {
  std::ostringstream msg;
  msg << "handle of rank " << rank << ": ";
  if (blob[kMagicAt] != kMagic) {
    msg << "field magic is " << hex32(static_cast<uint32_t>(blob[kMagicAt]))
        << ", expected 0x4a344554 ('TE4J'): not a te4j handle, or corrupted in transit";
  } else if (blob[kVersionAt] != kVersion) {
    msg << "field version is " << blob[kVersionAt] << ", this library reads version " << kVersion
        << ": all ranks must run the same te4j release";
  } else if (blob[kPlatformAt] != platform) {
    msg << "field platform is " << blob[kPlatformAt] << ", this transport is platform " << platform
        << " (0 = host, 1 = cuda): all ranks must use the same platform";
  } else if (blob[kPidAt] <= 0) {
    msg << "field pid is " << blob[kPidAt] << ", expected > 0";
  } else {
    const uint32_t* id = hostIdentity();
    for (int i = 0; i < kHostIdInts; ++i) {
      if (static_cast<uint32_t>(blob[kHostIdAt + i]) != id[i]) {
        msg << "field host identity differs from this process's: the peer runs on another host "
               "or in another pid namespace; P2P needs both on one host in one pid namespace";
        *why = msg.str();
        return kBadHandle;
      }
    }
    if (sizeOf(blob) != expected_bytes) {
      msg << "field size is " << sizeOf(blob) << " bytes, the local buffer has " << expected_bytes
          << ": every rank must allocate a buffer of the same size";
    } else {
      return kOk;
    }
  }
  *why = msg.str();
  return kBadHandle;
}

bool ownerExited(int32_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!in || !std::getline(in, stat)) return true;
  const size_t paren = stat.rfind(')');  // the command name may itself hold ')' or spaces
  if (paren == std::string::npos) return false;
  std::istringstream fields(stat.substr(paren + 1));
  std::string state, skip;
  unsigned long flags = 0;
  fields >> state >> skip >> skip >> skip >> skip >> skip >> flags;  // fields 3..9 of proc(5)
  constexpr unsigned long kPfExiting = 0x4;
  return state == "Z" || state == "X" || (fields && (flags & kPfExiting) != 0);
}

int checkImportArgs(int rank, int num_ranks, int transport_ranks, const int32_t* remote_handles,
                    uint64_t active_ranks_mask, std::string* why) {
  std::ostringstream msg;
  if (num_ranks < 1 || num_ranks > kMaxRanks) {
    msg << "num_ranks " << num_ranks << " is outside 1.." << kMaxRanks;
  } else if (num_ranks != transport_ranks) {
    msg << "num_ranks " << num_ranks << " differs from the " << transport_ranks
        << " ranks this transport was created for";
  } else if (rank < 0 || rank >= num_ranks) {
    msg << "rank " << rank << " is outside 0.." << num_ranks - 1;
  } else if (num_ranks < 64 && (active_ranks_mask >> num_ranks) != 0) {
    msg << "active_ranks_mask 0x" << std::hex << active_ranks_mask << std::dec
        << " has bits at or above num_ranks " << num_ranks;
  } else if (remote_handles == nullptr && (active_ranks_mask & ~(1ull << rank)) != 0) {
    msg << "remote_handles is null but active_ranks_mask names peers";
  } else {
    return kOk;
  }
  *why = msg.str();
  return kInvalidArgument;
}

}  // namespace blob

int P2pTransport::hostIdentity(uint8_t* out, int capacity) {
  if (out == nullptr || capacity < blob::kHostIdInts * 4) return kInvalidArgument;
  const uint32_t* id = blob::hostIdentity();
  for (int i = 0; i < blob::kHostIdInts; ++i)
    for (int b = 0; b < 4; ++b) out[4 * i + b] = (uint8_t)(id[i] >> (8 * b));
  return blob::kHostIdInts * 4;
}

}  // namespace te4j
