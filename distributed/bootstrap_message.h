// The messages of the process-group bootstrap (bootstrap.h) and their byte
// encoding, apart from any socket so that the decoder can be fuzzed
// (tests/fuzz/bootstrap_message_fuzz.cc).
//
// On the wire a message is a frame: a 4-byte little-endian body length,
// then the body: one type byte and the type's fields, each a u32
// (little-endian) or bytes (a u32 length, then the bytes). Encoding is
// canonical: DecodeMessage accepts exactly the bytes EncodeMessage writes,
// so EncodeMessage(DecodeMessage(b)) == b for every b it accepts.
//
//   std::string frame = EncodeFrame(Hello{...});
//   ASSIGN_OR_RETURN(uint32_t n, DecodeFrameLength(first4, max_bytes));
//   ASSIGN_OR_RETURN(BootstrapMessage m, DecodeMessage(body));
//
// Stateless functions on values; thread-safe.
#ifndef SLUICE_DISTRIBUTED_BOOTSTRAP_MESSAGE_H_
#define SLUICE_DISTRIBUTED_BOOTSTRAP_MESSAGE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sluice {

// Bumped when a message's layout changes; a peer of another version is
// refused by name.
inline constexpr uint32_t kBootstrapProtocolVersion = 1;
// Bytes of the length prefix.
inline constexpr size_t kFrameHeaderBytes = 4;
// Default cap on a message body (a rank's device report, an all-gather of
// them, a broadcast); BootstrapOptions::max_message_bytes overrides it.
inline constexpr size_t kDefaultMaxMessageBytes = 16 << 20;
// Caps inside a message, whatever the frame cap.
inline constexpr size_t kMaxFingerprintParts = 64;
inline constexpr size_t kMaxFingerprintNameBytes = 256;
inline constexpr size_t kMaxRefusalBytes = 4096;
// A hello comes before the peer has shown its job token, so it has a cap of
// its own, below any frame cap: fingerprints are digests, not files.
inline constexpr size_t kMaxHelloBytes = 1 << 20;

// One named part of a job's fingerprint ("model" -> a digest of the model
// file, "config" -> one of the cluster config): every rank must send the
// same parts, so a difference can be named.
struct FingerprintPart {
  std::string name;
  std::string bytes;
  bool operator==(const FingerprintPart&) const = default;
};

// A rank asks to join (the first message on a connection).
struct HelloMessage {
  uint32_t protocol_version = kBootstrapProtocolVersion;
  uint32_t world_size = 0;
  uint32_t rank = 0;
  std::string job_token;
  std::vector<FingerprintPart> fingerprint;
  bool operator==(const HelloMessage&) const = default;
};
// Rank 0 admits every rank (sent once all have joined).
struct WelcomeMessage {
  uint32_t world_size = 0;
  bool operator==(const WelcomeMessage&) const = default;
};
// Rank 0 refuses a rank or ends the job: an absl::StatusCode and why.
struct RefusalMessage {
  uint32_t code = 0;
  std::string message;
  bool operator==(const RefusalMessage&) const = default;
};
// A rank's blob for all-gather number `sequence`.
struct GatherMessage {
  uint32_t sequence = 0;
  uint32_t rank = 0;
  std::string blob;
  bool operator==(const GatherMessage&) const = default;
};
// Every rank's blob of all-gather `sequence`, in rank order.
struct GatherResultMessage {
  uint32_t sequence = 0;
  std::vector<std::string> blobs;
  bool operator==(const GatherResultMessage&) const = default;
};
// Rank 0's blob of broadcast `sequence`.
struct BroadcastMessage {
  uint32_t sequence = 0;
  std::string blob;
  bool operator==(const BroadcastMessage&) const = default;
};

using BootstrapMessage =
    std::variant<HelloMessage, WelcomeMessage, RefusalMessage, GatherMessage,
                 GatherResultMessage, BroadcastMessage>;

// "hello", "welcome", ... for errors ("expected welcome, got gather").
const char* MessageName(const BootstrapMessage& message);

// The body of `message` (no length prefix).
std::string EncodeMessage(const BootstrapMessage& message);
// The length prefix and the body.
std::string EncodeFrame(const BootstrapMessage& message);

// The body length in a frame's first kFrameHeaderBytes bytes.
// INVALID_ARGUMENT when `header` is not 4 bytes or the length is 0;
// RESOURCE_EXHAUSTED when it is above `max_bytes` (with a hint when the
// bytes look like text: something other than a sluice rank is talking).
absl::StatusOr<uint32_t> DecodeFrameLength(absl::string_view header,
                                           size_t max_bytes);

// A body. INVALID_ARGUMENT, saying what and where, for an unknown type, a
// field that runs past the end, bytes left over, or a cap above exceeded.
absl::StatusOr<BootstrapMessage> DecodeMessage(absl::string_view body);

// The status a refusal carries (an unknown code becomes UNKNOWN), its
// message prefixed by `prefix`.
absl::Status RefusalToStatus(const RefusalMessage& refusal,
                             absl::string_view prefix);

}  // namespace sluice

#endif  // SLUICE_DISTRIBUTED_BOOTSTRAP_MESSAGE_H_
