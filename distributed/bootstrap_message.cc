#include "distributed/bootstrap_message.h"

#include <type_traits>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace sluice {
namespace {

enum MessageType : uint8_t {
  kHello = 1,
  kWelcome = 2,
  kRefusal = 3,
  kGather = 4,
  kGatherResult = 5,
  kBroadcast = 6,
};

void PutU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutBytes(std::string* out, absl::string_view bytes) {
  PutU32(out, static_cast<uint32_t>(bytes.size()));
  out->append(bytes.data(), bytes.size());
}

uint32_t GetU32Unchecked(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= uint32_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return v;
}

// Reads fields from a body, each read checked against what is left.
class Reader {
 public:
  Reader(absl::string_view body, const char* what)
      : rest_(body), total_(body.size()), what_(what) {}

  absl::StatusOr<uint32_t> U32(const char* field) {
    if (rest_.size() < 4) return Truncated(field, 4);
    uint32_t v = GetU32Unchecked(rest_.data());
    rest_.remove_prefix(4);
    return v;
  }
  absl::StatusOr<std::string> Bytes(const char* field, size_t cap) {
    ASSIGN_OR_RETURN(uint32_t n, U32(field));
    if (n > cap) {
      return absl::InvalidArgumentError(
          absl::StrCat(what_, " message: ", field, " of ", n,
                       " bytes is above its cap of ", cap));
    }
    if (rest_.size() < n) return Truncated(field, n);
    std::string out(rest_.substr(0, n));
    rest_.remove_prefix(n);
    return out;
  }
  // A count of items that take at least `min_item_bytes` each: no more
  // than the bytes left can hold, so a count never sizes an allocation
  // beyond the message.
  absl::StatusOr<uint32_t> Count(const char* field, size_t min_item_bytes,
                                 size_t cap) {
    ASSIGN_OR_RETURN(uint32_t n, U32(field));
    if (n > cap || n > rest_.size() / min_item_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          what_, " message: ", field, " ", n, " is more than ",
          n > cap ? absl::StrCat("the cap of ", cap) : "the message holds"));
    }
    return n;
  }
  absl::Status Done() const {
    if (!rest_.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what_, " message: ", rest_.size(),
                       " bytes left over after its last field"));
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Truncated(const char* field, size_t need) const {
    return absl::InvalidArgumentError(absl::StrCat(
        what_, " message ends inside ", field, " (at byte ",
        total_ - rest_.size(), " of ", total_, ", ", need, " more needed)"));
  }
  absl::string_view rest_;
  size_t total_;
  const char* what_;
};

absl::StatusOr<BootstrapMessage> DecodeHello(Reader& r) {
  HelloMessage m;
  ASSIGN_OR_RETURN(m.protocol_version, r.U32("protocol version"));
  ASSIGN_OR_RETURN(m.world_size, r.U32("world size"));
  ASSIGN_OR_RETURN(m.rank, r.U32("rank"));
  ASSIGN_OR_RETURN(m.job_token, r.Bytes("job token", 1024));
  ASSIGN_OR_RETURN(uint32_t parts,
                   r.Count("fingerprint part count", 8, kMaxFingerprintParts));
  for (uint32_t i = 0; i < parts; ++i) {
    FingerprintPart part;
    ASSIGN_OR_RETURN(
        part.name, r.Bytes("fingerprint part name", kMaxFingerprintNameBytes));
    ASSIGN_OR_RETURN(part.bytes, r.Bytes("fingerprint part", kMaxHelloBytes));
    m.fingerprint.push_back(std::move(part));
  }
  RETURN_IF_ERROR(r.Done());
  return m;
}

}  // namespace

const char* MessageName(const BootstrapMessage& message) {
  static constexpr const char* kNames[] = {
      "hello", "welcome", "refusal", "gather", "gather result", "broadcast"};
  return kNames[message.index()];
}

std::string EncodeMessage(const BootstrapMessage& message) {
  std::string out;
  std::visit(
      [&out](const auto& m) {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, HelloMessage>) {
          out.push_back(static_cast<char>(kHello));
          PutU32(&out, m.protocol_version);
          PutU32(&out, m.world_size);
          PutU32(&out, m.rank);
          PutBytes(&out, m.job_token);
          PutU32(&out, static_cast<uint32_t>(m.fingerprint.size()));
          for (const FingerprintPart& p : m.fingerprint) {
            PutBytes(&out, p.name);
            PutBytes(&out, p.bytes);
          }
        } else if constexpr (std::is_same_v<T, WelcomeMessage>) {
          out.push_back(static_cast<char>(kWelcome));
          PutU32(&out, m.world_size);
        } else if constexpr (std::is_same_v<T, RefusalMessage>) {
          out.push_back(static_cast<char>(kRefusal));
          PutU32(&out, m.code);
          PutBytes(&out, m.message);
        } else if constexpr (std::is_same_v<T, GatherMessage>) {
          out.push_back(static_cast<char>(kGather));
          PutU32(&out, m.sequence);
          PutU32(&out, m.rank);
          PutBytes(&out, m.blob);
        } else if constexpr (std::is_same_v<T, GatherResultMessage>) {
          out.push_back(static_cast<char>(kGatherResult));
          PutU32(&out, m.sequence);
          PutU32(&out, static_cast<uint32_t>(m.blobs.size()));
          for (const std::string& b : m.blobs) PutBytes(&out, b);
        } else {
          out.push_back(static_cast<char>(kBroadcast));
          PutU32(&out, m.sequence);
          PutBytes(&out, m.blob);
        }
      },
      message);
  return out;
}

std::string EncodeFrame(const BootstrapMessage& message) {
  std::string body = EncodeMessage(message);
  std::string out;
  out.reserve(kFrameHeaderBytes + body.size());
  PutU32(&out, static_cast<uint32_t>(body.size()));
  out += body;
  return out;
}

absl::StatusOr<uint32_t> DecodeFrameLength(absl::string_view header,
                                           size_t max_bytes) {
  if (header.size() != kFrameHeaderBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("a message length prefix is ", kFrameHeaderBytes,
                     " bytes, not ", header.size()));
  }
  uint32_t n = GetU32Unchecked(header.data());
  if (n == 0) return absl::InvalidArgumentError("empty message (length 0)");
  if (n > max_bytes) {
    bool text = true;
    for (char c : header) text = text && c >= 0x20 && c < 0x7f;
    return absl::ResourceExhaustedError(absl::StrCat(
        "message of ", n, " bytes is above the cap of ", max_bytes,
        " bytes (BootstrapOptions::max_message_bytes)",
        text ? absl::StrCat(
                   "; it starts with the text '", absl::CHexEscape(header),
                   "': is something other than a sluice rank connecting?")
             : ""));
  }
  return n;
}

absl::StatusOr<BootstrapMessage> DecodeMessage(absl::string_view body) {
  if (body.empty()) return absl::InvalidArgumentError("empty message");
  uint8_t type = static_cast<uint8_t>(body[0]);
  body.remove_prefix(1);
  switch (type) {
    case kHello: {
      Reader r(body, "hello");
      return DecodeHello(r);
    }
    case kWelcome: {
      Reader r(body, "welcome");
      WelcomeMessage m;
      ASSIGN_OR_RETURN(m.world_size, r.U32("world size"));
      RETURN_IF_ERROR(r.Done());
      return m;
    }
    case kRefusal: {
      Reader r(body, "refusal");
      RefusalMessage m;
      ASSIGN_OR_RETURN(m.code, r.U32("status code"));
      ASSIGN_OR_RETURN(m.message, r.Bytes("reason", kMaxRefusalBytes));
      RETURN_IF_ERROR(r.Done());
      return m;
    }
    case kGather: {
      Reader r(body, "gather");
      GatherMessage m;
      ASSIGN_OR_RETURN(m.sequence, r.U32("sequence"));
      ASSIGN_OR_RETURN(m.rank, r.U32("rank"));
      ASSIGN_OR_RETURN(m.blob, r.Bytes("blob", body.size()));
      RETURN_IF_ERROR(r.Done());
      return m;
    }
    case kGatherResult: {
      Reader r(body, "gather result");
      GatherResultMessage m;
      ASSIGN_OR_RETURN(m.sequence, r.U32("sequence"));
      ASSIGN_OR_RETURN(uint32_t n, r.Count("blob count", 4, 65536));
      m.blobs.reserve(n);
      for (uint32_t i = 0; i < n; ++i) {
        ASSIGN_OR_RETURN(std::string b, r.Bytes("blob", body.size()));
        m.blobs.push_back(std::move(b));
      }
      RETURN_IF_ERROR(r.Done());
      return m;
    }
    case kBroadcast: {
      Reader r(body, "broadcast");
      BroadcastMessage m;
      ASSIGN_OR_RETURN(m.sequence, r.U32("sequence"));
      ASSIGN_OR_RETURN(m.blob, r.Bytes("blob", body.size()));
      RETURN_IF_ERROR(r.Done());
      return m;
    }
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("unknown message type ", static_cast<int>(type),
                       " (this sluice speaks bootstrap protocol ",
                       kBootstrapProtocolVersion, ")"));
  }
}

absl::Status RefusalToStatus(const RefusalMessage& refusal,
                             absl::string_view prefix) {
  absl::StatusCode code = absl::StatusCode::kUnknown;
  if (refusal.code > 0 && refusal.code <= 16)
    code = static_cast<absl::StatusCode>(refusal.code);
  return absl::Status(code, absl::StrCat(prefix, refusal.message));
}

}  // namespace sluice
