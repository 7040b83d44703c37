// handle_blob.cpp — the common handle header (host identity, writing, strict checking) and the
// wire bytes: encoder and strict decoder.
#include "p2p/handle_blob.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <mutex>
#include <sstream>

#include "core/crc32.h"
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

uint32_t getLe32(const uint8_t* p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void putLe32(std::vector<uint8_t>* out, uint32_t v) {
  for (int b = 0; b < 4; ++b) out->push_back((uint8_t)(v >> (8 * b)));
}

bool refuse(std::string* why, const std::string& text) {
  *why = "IPC handle " + text;
  return false;
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
  } else if (!isFromThisHost(blob)) {
    msg << "field host identity differs from this process's: the peer runs on another host "
           "or in another pid namespace; P2P needs both on one host in one pid namespace";
  } else if (sizeOf(blob) != expected_bytes) {
    msg << "field size is " << sizeOf(blob) << " bytes, the local buffer has " << expected_bytes
        << ": every rank must allocate a buffer of the same size";
  } else {
    return kOk;
  }
  *why = msg.str();
  return kBadHandle;
}

std::vector<uint8_t> encodeWire(const int32_t* words, int count) {
  std::vector<uint8_t> out;
  if (words == nullptr || count <= 0) return out;
  out.reserve(4 * (size_t)count + kCrcBytes);
  for (int i = 0; i < count; ++i) putLe32(&out, (uint32_t)words[i]);
  putLe32(&out, crc32(out.data(), out.size()));
  return out;
}

bool decodeWire(const uint8_t* bytes, size_t length, std::vector<int32_t>* words,
                std::string* why) {
  // No bytes at all is a truncation, whatever the pointer; bytes promised but absent are null.
  if (bytes == nullptr && length > 0) return refuse(why, "is null");
  if (length < (size_t)kMinWireBytes)
    return refuse(why, "truncated: field length is " + std::to_string(length) +
                           " bytes, the smallest handle has " + std::to_string(kMinWireBytes));
  if (length > (size_t)kMaxWireBytes)
    return refuse(why, "oversize: field length is " + std::to_string(length) +
                           " bytes, the largest handle has " + std::to_string(kMaxWireBytes));
  if (length % 4 != 0)
    return refuse(why, "field length is " + std::to_string(length) +
                           " bytes, not whole 32-bit words (truncated or extended in transit)");
  const uint32_t magic = getLe32(bytes + 4 * kMagicAt);
  if (magic != (uint32_t)kMagic)
    return refuse(why, "field magic is " + hex32(magic) +
                           ", expected 0x4a344554 ('TE4J'): not a te4j IPC handle");
  const int32_t version = (int32_t)getLe32(bytes + 4 * kVersionAt);
  if (version != kVersion)
    return refuse(why, "field version is " + std::to_string(version) + ", this te4j reads " +
                           std::to_string(kVersion) +
                           " (fix: run the same te4j version on every rank)");
  const int32_t platform = (int32_t)getLe32(bytes + 4 * kPlatformAt);
  const int ints = handleIntsOf(platform);
  if (ints == 0)
    return refuse(
        why, "field platform is " + std::to_string(platform) + ", expected 0 (host) or 1 (cuda)");
  if (length != (size_t)wireBytesOf(platform))
    return refuse(why, "field length is " + std::to_string(length) +
                           " bytes, a handle of platform " + std::to_string(platform) + " has " +
                           std::to_string(wireBytesOf(platform)));
  const size_t body = length - kCrcBytes;
  const uint32_t stored = getLe32(bytes + body);
  const uint32_t computed = crc32(bytes, body);
  if (stored != computed)
    return refuse(why, "field crc32 is " + hex32(stored) + ", the bytes give " + hex32(computed) +
                           ": corrupted in transit");
  std::vector<int32_t> w((size_t)ints);
  for (int i = 0; i < ints; ++i) w[(size_t)i] = (int32_t)getLe32(bytes + 4 * i);
  if (w[kPidAt] <= 0)
    return refuse(why, "field pid is " + std::to_string(w[kPidAt]) + ", expected > 0");
  const uint64_t size = sizeOf(w.data());
  if (size == 0 || (int64_t)size < 0)
    return refuse(why,
                  "field size is " + std::to_string((int64_t)size) + " bytes, expected 1..2^63-1");
  *words = std::move(w);
  return true;
}

bool isFromThisHost(const int32_t* blob) {
  const uint32_t* id = hostIdentity();
  for (int i = 0; i < kHostIdInts; ++i)
    if (static_cast<uint32_t>(blob[kHostIdAt + i]) != id[i]) return false;
  return true;
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

int32_t threadGroupOf(int32_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (in && std::getline(in, line)) {
    if (line.compare(0, 5, "Tgid:") == 0) {
      try {
        return static_cast<int32_t>(std::stol(line.substr(5)));
      } catch (...) {
        return -1;
      }
    }
  }
  return -1;
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
}  // namespace te4j
