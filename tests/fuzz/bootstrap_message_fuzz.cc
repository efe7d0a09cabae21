// libFuzzer target: arbitrary bytes as what a peer sends the coordinator of
// the process-group bootstrap (distributed/bootstrap_message.h): a stream of
// length-prefixed frames, each through DecodeFrameLength (with the default
// cap) and DecodeMessage. A message it accepts must encode back to exactly
// its bytes (the encoding is canonical), and then goes through what rank 0
// does with it: the token compare and the fingerprint difference of a
// hello, the status of a refusal. The same bytes are also read as a
// SLUICE_COORDINATOR address. Any crash, sanitizer report or abort is a bug.
//
//   build-asan/tests/fuzz/bootstrap_message_fuzz -timeout=2 \
//     tests/fuzz/corpus/bootstrap_message_fuzz
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <variant>
#include <vector>

#include "absl/strings/string_view.h"
#include "distributed/bootstrap.h"
#include "distributed/bootstrap_message.h"
#include "distributed/process_group_info.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view in(reinterpret_cast<const char*>(data), size);
  (void)sluice::ParseHostPort(in, "SLUICE_COORDINATOR");
  static const std::vector<sluice::FingerprintPart> kMine = {
      {"model", "0123456789abcdef"}, {"config", "cfg"}};
  while (in.size() >= sluice::kFrameHeaderBytes) {
    absl::StatusOr<uint32_t> length =
        sluice::DecodeFrameLength(in.substr(0, sluice::kFrameHeaderBytes),
                                  sluice::kDefaultMaxMessageBytes);
    if (!length.ok()) return 0;
    in.remove_prefix(sluice::kFrameHeaderBytes);
    if (in.size() < *length) return 0;  // a peer that stops mid-message
    absl::string_view body = in.substr(0, *length);
    in.remove_prefix(*length);
    absl::StatusOr<sluice::BootstrapMessage> message =
        sluice::DecodeMessage(body);
    if (!message.ok()) continue;
    if (sluice::EncodeMessage(*message) != body) abort();
    if (const auto* hello = std::get_if<sluice::HelloMessage>(&*message)) {
      (void)sluice::ConstantTimeEquals(hello->job_token,
                                       "fuzz-token-0123456789");
      (void)sluice::DescribeFingerprintDifference(kMine, hello->fingerprint);
    } else if (const auto* refusal =
                   std::get_if<sluice::RefusalMessage>(&*message)) {
      if (sluice::RefusalToStatus(*refusal, "fuzz: ").ok()) abort();
    }
  }
  return 0;
}
