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

#include <algorithm>
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

// The four lanes' state between pieces of one input (FingerprintFile feeds
// a mapping window by window).
struct Lanes {
  uint64_t v1, v2, v3, v4;
};

Lanes StartLanes(uint64_t seed) {
  return {seed + kMulA + kMulB, seed + kMulB, seed, seed - kMulA};
}

// The lane rounds over `blocks` 32-byte blocks at `p`.
void RunLanes(Lanes* l, const unsigned char* p, size_t blocks) {
  uint64_t v1 = l->v1, v2 = l->v2, v3 = l->v3, v4 = l->v4;
  for (size_t i = 0; i < blocks; ++i, p += 32) {
    v1 = Round(v1, Load64(p));
    v2 = Round(v2, Load64(p + 8));
    v3 = Round(v3, Load64(p + 16));
    v4 = Round(v4, Load64(p + 24));
  }
  *l = {v1, v2, v3, v4};
}

// The fingerprint of `bytes` bytes whose bytes / 32 whole blocks went
// through `lanes` (null when there are none) and whose tail is [p, end).
uint64_t Finish(const Lanes* lanes, uint64_t seed, size_t bytes,
                const unsigned char* p, const unsigned char* end) {
  uint64_t h;
  if (lanes != nullptr) {
    h = Rotl(lanes->v1, 1) + Rotl(lanes->v2, 7) + Rotl(lanes->v3, 12) +
        Rotl(lanes->v4, 18);
    for (uint64_t v : {lanes->v1, lanes->v2, lanes->v3, lanes->v4}) {
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

// FingerprintFile hashes a mapping this many bytes at a time (a multiple of
// 32 and of the page size) and drops each window's pages from the process
// after it: a file's fingerprint costs no resident memory of its size.
constexpr size_t kFileWindowBytes = size_t{8} << 20;

}  // namespace

uint64_t Fingerprint64(const void* data, size_t bytes, uint64_t seed) {
  const auto* p = static_cast<const unsigned char*>(data);
  if (bytes < 32) return Finish(nullptr, seed, bytes, p, p + bytes);
  Lanes lanes = StartLanes(seed);
  const size_t blocks = bytes / 32;
  RunLanes(&lanes, p, blocks);
  return Finish(&lanes, seed, bytes, p + blocks * 32, p + bytes);
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
  // Fingerprint64's value, window by window: each window's pages leave
  // this process's resident set (they stay in the page cache) once hashed.
  const auto* p = static_cast<const unsigned char*>(base);
  uint64_t h;
  if (bytes < 32) {
    h = Finish(nullptr, 0, bytes, p, p + bytes);
  } else {
    Lanes lanes = StartLanes(0);
    const size_t blocks = bytes / 32;
    const size_t window_blocks = kFileWindowBytes / 32;
    for (size_t done = 0; done < blocks;) {
      const size_t n = std::min(window_blocks, blocks - done);
      RunLanes(&lanes, p + done * 32, n);
      if (n == window_blocks) {
        madvise(const_cast<unsigned char*>(p) + done * 32, n * 32,
                MADV_DONTNEED);
      }
      done += n;
    }
    h = Finish(&lanes, 0, bytes, p + blocks * 32, p + bytes);
  }
  munmap(base, bytes);
  return h;
}

std::string FingerprintHex(uint64_t fingerprint) {
  return absl::StrFormat("%016x", fingerprint);
}

}  // namespace sluice
