// libFuzzer target: arbitrary bytes through the .npy reader (ParseNpy, what
// ReadNpy and `sluice run --input` use), and a tensor it accepts back out
// through SerializeNpy and in again, which must give the same bytes. Any
// crash, sanitizer report or abort is a bug.
//
//   scripts/sanitize.sh   # or a build with -DSLUICE_FUZZ=ON (tests/fuzz/README.md)
//   build-asan/tests/fuzz/npy_fuzz -timeout=2 tests/fuzz/corpus/npy_fuzz
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/strings/string_view.h"
#include "core/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<sluice::Tensor> t = sluice::ParseNpy(bytes, "fuzz.npy");
  if (!t.ok()) return 0;
  // What was read writes back out and reads in again, unchanged.
  absl::StatusOr<std::string> out = sluice::SerializeNpy(*t);
  if (!out.ok()) abort();
  absl::StatusOr<sluice::Tensor> again = sluice::ParseNpy(*out, "again.npy");
  if (!again.ok() || again->dtype() != t->dtype() ||
      again->shape() != t->shape() ||
      again->bytes() != t->bytes() ||
      (t->bytes() > 0 &&
       memcmp(again->raw_data(), t->raw_data(), t->bytes()) != 0)) {
    abort();
  }
  return 0;
}
