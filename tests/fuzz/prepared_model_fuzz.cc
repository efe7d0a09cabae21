// libFuzzer target: arbitrary bytes as a prepared model file
// (model/prepared_model.h), read as a session would (its own key, so the
// key check passes) both as they are and with the header's fingerprint
// made to match, so that the header's parse and the size and range checks
// behind it are reached. Any crash, sanitizer report or abort is a bug: a
// damaged file is refused, never read out of bounds.
//
//   build-asan/tests/fuzz/prepared_model_fuzz -timeout=2 -max_total_time=60
//     tests/fuzz/corpus/prepared_model_fuzz   (one command line)
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "core/fingerprint.h"
#include "google/protobuf/stubs/logging.h"
#include "model/prepared_model.h"

namespace {

void ReadAsASessionWould(const std::string& path) {
  (void)sluice::IsPreparedModelFile(path);
  absl::StatusOr<sluice::PreparedModelHeader> h =
      sluice::ReadPreparedModelHeader(path);
  std::vector<sluice::PreparedKeyPart> key;
  if (h.ok()) key.assign(h->key().begin(), h->key().end());
  (void)sluice::ReadPreparedModel(path, key);
}

void Write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  google::protobuf::LogSilencer quiet;
  static const std::string path =
      "/tmp/sluice_prepared_model_fuzz_" + std::to_string(getpid());
  std::string bytes(reinterpret_cast<const char*>(data), size);
  Write(path, bytes);
  ReadAsASessionWould(path);
  // The header's fingerprint (bytes 24-32 of the prefix) made to match the
  // header size the prefix claims, where that fits the input.
  if (bytes.size() >= 40) {
    uint64_t header_bytes = 0;
    std::memcpy(&header_bytes, bytes.data() + 16, sizeof header_bytes);
    if (header_bytes <= bytes.size() - 40) {
      const uint64_t f = sluice::Fingerprint64(bytes.data() + 40, header_bytes);
      std::memcpy(bytes.data() + 24, &f, sizeof f);
      Write(path, bytes);
      ReadAsASessionWould(path);
    }
  }
  return 0;
}
