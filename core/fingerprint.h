// Fingerprint64: a fast, stable 64-bit hash of bytes, the same on every run,
// build and machine (unlike absl::Hash, which is seeded per process). What a
// file on disk is keyed and checked by: a prepared model's source model and
// its own contents (model/prepared_model.h). Not cryptographic: it catches
// changed, truncated and corrupt bytes, not an adversary's.
//
//   uint64_t h = Fingerprint64(tensor.raw_data(), tensor.bytes());
//   ASSIGN_OR_RETURN(uint64_t f, FingerprintFile("model.onnx"));
//   std::string text = FingerprintHex(f);  // "3f9a0c1d2e4b5a69"
//
// Stateless functions; thread-safe.
#ifndef SLUICE_CORE_FINGERPRINT_H_
#define SLUICE_CORE_FINGERPRINT_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace sluice {

// The fingerprint of `bytes` bytes at `data`, continuing from `seed` (a
// previous fingerprint chains pieces). Four independent multiply-rotate
// lanes over 32-byte blocks, so it runs at memory speed (several GB/s).
uint64_t Fingerprint64(const void* data, size_t bytes, uint64_t seed = 0);

// The fingerprint of a whole file's bytes (Fingerprint64's value), read
// through a read-only mapping (no copy) 8 MiB at a time, each window's pages
// dropped from the process once hashed: the file's size never becomes
// resident memory of the caller (it stays in the page cache). NOT_FOUND for a missing file, PERMISSION_DENIED for an
// unreadable one, DATA_LOSS when it cannot be read; each names the path.
// The size is returned through `size` when it is not null.
absl::StatusOr<uint64_t> FingerprintFile(const std::string& path,
                                         int64_t* size = nullptr);

// 16 lowercase hex digits.
std::string FingerprintHex(uint64_t fingerprint);

}  // namespace sluice

#endif  // SLUICE_CORE_FINGERPRINT_H_
