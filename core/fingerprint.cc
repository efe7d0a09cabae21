// Fingerprint64 (core/fingerprint.h). Each lane takes every fourth 8-byte
// word: lane = rotl(lane + word * kMulA, 31) * kMulB, the multiply-rotate
// round of the common non-cryptographic hashes; the lanes are independent,
// so the CPU runs them in parallel. The lanes, the tail and the length are
// then mixed and finished with an avalanche (every input bit reaches every
// output bit).
#include "core/fingerprint.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace sluice {
namespace {

constexpr uint64_t kMulA = 0x9e3779b97f4a7c15ull;  // 2^64 / golden ratio
constexpr uint64_t kMulB = 0xc2b2ae3d27d4eb4full;
constexpr uint64_t kMulC = 0x165667b19e3779f9ull;

inline uint64_t Rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

inline uint64_t Load64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);  // little-endian hosts only (x86-64, arm64)
  return v;
}

inline uint64_t Round(uint64_t lane, uint64_t word) {
  return Rotl(lane + word * kMulA, 31) * kMulB;
}

inline uint64_t Avalanche(uint64_t h) {
  h ^= h >> 33;
  h *= kMulB;
  h ^= h >> 29;
  h *= kMulC;
  h ^= h >> 32;
  return h;
}

}  // namespace

uint64_t Fingerprint64(const void* data, size_t bytes, uint64_t seed) {
  const auto* p = static_cast<const unsigned char*>(data);
  const unsigned char* const end = p + bytes;
  uint64_t h;
  if (bytes >= 32) {
    uint64_t v1 = seed + kMulA + kMulB;
    uint64_t v2 = seed + kMulB;
    uint64_t v3 = seed;
    uint64_t v4 = seed - kMulA;
    const unsigned char* const last_block = end - 32;
    do {
      v1 = Round(v1, Load64(p));
      v2 = Round(v2, Load64(p + 8));
      v3 = Round(v3, Load64(p + 16));
      v4 = Round(v4, Load64(p + 24));
      p += 32;
    } while (p <= last_block);
    h = Rotl(v1, 1) + Rotl(v2, 7) + Rotl(v3, 12) + Rotl(v4, 18);
    for (uint64_t v : {v1, v2, v3, v4}) {
      h = (h ^ Round(0, v)) * kMulA + kMulC;
    }
  } else {
    h = seed + kMulC;
  }
  h += static_cast<uint64_t>(bytes);
  for (; p + 8 <= end; p += 8) {
    h = Rotl(h ^ Round(0, Load64(p)), 27) * kMulA + kMulB;
  }
  for (; p < end; ++p) {
    h = Rotl(h ^ (static_cast<uint64_t>(*p) * kMulC), 11) * kMulA;
  }
  return Avalanche(h);
}

absl::StatusOr<uint64_t> FingerprintFile(const std::string& path,
                                         int64_t* size) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    if (err == EACCES || err == EPERM) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot open ", path, ": ", std::strerror(err)));
    }
    return absl::NotFoundError(
        absl::StrCat("cannot open ", path, ": ", std::strerror(err)));
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return absl::NotFoundError(absl::StrCat(path, " is not a regular file"));
  }
  const size_t bytes = static_cast<size_t>(st.st_size);
  if (size != nullptr) *size = static_cast<int64_t>(st.st_size);
  if (bytes == 0) {
    close(fd);
    return Fingerprint64(nullptr, 0);
  }
  void* base = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
  const int err = errno;
  close(fd);
  if (base == MAP_FAILED) {
    return absl::DataLossError(
        absl::StrCat("cannot map ", path, ": ", std::strerror(err)));
  }
  madvise(base, bytes, MADV_SEQUENTIAL);
  const uint64_t h = Fingerprint64(base, bytes);
  munmap(base, bytes);
  return h;
}

std::string FingerprintHex(uint64_t fingerprint) {
  return absl::StrFormat("%016x", fingerprint);
}

}  // namespace sluice
