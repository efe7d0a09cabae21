#include "distributed/bootstrap.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"

namespace sluice {
namespace {

// How long a refusal may take to send: the refused side may be gone.
constexpr absl::Duration kRefusalSendTimeout = absl::Seconds(1);

std::string Seconds(absl::Duration d) {
  return absl::StrFormat("%.1f s", absl::ToDoubleSeconds(d));
}

std::string ShowBytes(absl::string_view bytes) {
  std::string hex = absl::BytesToHexString(bytes.substr(0, 8));
  return absl::StrCat(hex, bytes.size() > 8 ? "..." : "", " (", bytes.size(),
                      " bytes)");
}

absl::Status ValidateOptions(const BootstrapOptions& o) {
  if (o.world_size < 1 || o.world_size > kMaxWorldSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("bootstrap: world size ", o.world_size, " is not in 1..",
                     kMaxWorldSize));
  }
  if (o.rank < 0 || o.rank >= o.world_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bootstrap: rank ", o.rank, " is not in 0..", o.world_size - 1));
  }
  if (o.world_size > 1 && (o.job_token.size() < kMinJobTokenLength ||
                           o.job_token.size() > kMaxJobTokenLength)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bootstrap: the job token must have ", kMinJobTokenLength, " to ",
        kMaxJobTokenLength, " characters (it has ", o.job_token.size(), ")"));
  }
  if (o.fingerprint.size() > kMaxFingerprintParts) {
    return absl::InvalidArgumentError(
        absl::StrCat("bootstrap: ", o.fingerprint.size(),
                     " fingerprint parts, at most ", kMaxFingerprintParts));
  }
  absl::flat_hash_set<std::string> names;
  for (const FingerprintPart& p : o.fingerprint) {
    if (p.name.empty() || p.name.size() > kMaxFingerprintNameBytes ||
        !names.insert(p.name).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "bootstrap: fingerprint part name '", absl::CHexEscape(p.name),
          "' is empty, too long or repeated"));
    }
  }
  HelloMessage hello{kBootstrapProtocolVersion, 0, 0, o.job_token,
                     o.fingerprint};
  if (EncodeMessage(hello).size() > kMaxHelloBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bootstrap: the fingerprint is above ", kMaxHelloBytes,
        " bytes; pass digests of the model and config, not their contents"));
  }
  if (o.max_message_bytes < 64) {
    return absl::InvalidArgumentError("bootstrap: max_message_bytes below 64");
  }
  return absl::OkStatus();
}

RefusalMessage ToRefusal(const absl::Status& status) {
  std::string message(status.message().substr(0, kMaxRefusalBytes));
  return RefusalMessage{static_cast<uint32_t>(status.code()),
                        std::move(message)};
}

// Best effort: the other side may be gone already.
void SendRefusal(const TcpSocket& socket, const absl::Status& status,
                 absl::string_view peer) {
  (void)SendMessage(socket, ToRefusal(status),
                    absl::Now() + kRefusalSendTimeout, peer);
}

// "rank 2" or "ranks 2, 3" of the ranks in 1..n-1 without a connection
// (the first 16, then how many more).
std::string MissingRanks(const std::vector<TcpSocket>& peers) {
  std::vector<int> missing;
  for (size_t r = 1; r < peers.size(); ++r) {
    if (!peers[r].valid()) missing.push_back(static_cast<int>(r));
  }
  std::string out = absl::StrCat(
      missing.size() == 1 ? "rank " : "ranks ",
      absl::StrJoin(missing.begin(),
                    missing.begin() + std::min<size_t>(missing.size(), 16),
                    ", "));
  if (missing.size() > 16)
    absl::StrAppend(&out, " and ", missing.size() - 16, " more");
  return out;
}

std::string ExpectedGot(absl::string_view expected,
                        const BootstrapMessage& got) {
  return absl::StrCat("expected a ", expected, " message, got a ",
                      MessageName(got));
}

}  // namespace

std::string DescribeFingerprintDifference(
    const std::vector<FingerprintPart>& mine,
    const std::vector<FingerprintPart>& theirs) {
  std::vector<std::string> diffs;
  for (const FingerprintPart& m : mine) {
    auto it = std::find_if(
        theirs.begin(), theirs.end(),
        [&](const FingerprintPart& t) { return t.name == m.name; });
    if (it == theirs.end()) {
      diffs.push_back(absl::StrCat("no '", absl::CHexEscape(m.name),
                                   "' (rank 0 has ", ShowBytes(m.bytes), ")"));
    } else if (it->bytes != m.bytes) {
      diffs.push_back(absl::StrCat("'", absl::CHexEscape(m.name), "' is ",
                                   ShowBytes(it->bytes), " against rank 0's ",
                                   ShowBytes(m.bytes)));
    }
  }
  for (const FingerprintPart& t : theirs) {
    bool known =
        std::any_of(mine.begin(), mine.end(),
                    [&](const FingerprintPart& m) { return m.name == t.name; });
    if (!known) {
      diffs.push_back(absl::StrCat("'", absl::CHexEscape(t.name), "' ",
                                   ShowBytes(t.bytes),
                                   ", which rank 0 does not have"));
    }
  }
  return absl::StrJoin(diffs, "; ");
}

absl::StatusOr<BootstrapOptions> BootstrapOptionsFor(
    const ProcessGroupInfo& info, std::vector<FingerprintPart> fingerprint) {
  BootstrapOptions options;
  options.rank = info.rank;
  options.world_size = info.world_size;
  options.job_token = info.job_token;
  options.fingerprint = std::move(fingerprint);
  if (info.world_size == 1) return options;  // no one to meet
  if (!info.coordinator.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", info.rank, " of ", info.world_size,
                     ": no coordinator address: set ", kEnvCoordinator,
                     "=host:port (the same in every rank)"));
  }
  if (info.job_token.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rank ", info.rank, " of ", info.world_size, ": no job token: set ",
        kEnvJobToken, " (the same secret in every rank)"));
  }
  options.coordinator = *info.coordinator;
  return options;
}

// --- ProcessGroupBootstrap ---------------------------------------------------

ProcessGroupBootstrap::ProcessGroupBootstrap(BootstrapOptions options,
                                             std::vector<TcpSocket> peers,
                                             TcpSocket coordinator)
    : options_(std::move(options)),
      coordinator_name_(
          absl::StrCat("the coordinator at ", options_.coordinator.ToString())),
      peers_(std::move(peers)),
      coordinator_(std::move(coordinator)) {}

absl::Status ProcessGroupBootstrap::CheckUsable() const {
  if (failure_.ok()) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("the process group failed earlier and cannot be used: ",
                   failure_.message()));
}

absl::Status ProcessGroupBootstrap::Fail(absl::Status status) {
  failure_ = status;
  for (size_t r = 1; r < peers_.size(); ++r) {
    if (peers_[r].valid())
      SendRefusal(peers_[r], status, absl::StrCat("rank ", r));
    peers_[r].Close();
  }
  coordinator_.Close();
  return status;
}

absl::StatusOr<BootstrapMessage> ProcessGroupBootstrap::ReceiveFromCoordinator(
    absl::string_view what, absl::Time deadline) {
  absl::StatusOr<BootstrapMessage> m = ReceiveMessage(
      coordinator_, options_.max_message_bytes, deadline, coordinator_name_);
  if (!m.ok()) {
    return Fail(absl::Status(m.status().code(),
                             absl::StrCat("rank ", rank(), " in ", what, ": ",
                                          m.status().message())));
  }
  if (const auto* refusal = std::get_if<RefusalMessage>(&*m)) {
    return Fail(
        RefusalToStatus(*refusal, absl::StrCat("rank ", rank(), " in ", what,
                                               ": rank 0 ended the job: ")));
  }
  return m;
}

absl::StatusOr<std::vector<std::string>> ProcessGroupBootstrap::AllGather(
    absl::string_view blob, absl::Duration timeout) {
  RETURN_IF_ERROR(CheckUsable());
  const absl::Time deadline = absl::Now() + timeout;
  const uint32_t sequence = ++sequence_;
  const std::string what = absl::StrCat("all-gather ", sequence);
  // A blob's share of the result: its bytes and a length.
  if (blob.size() + 16 > options_.max_message_bytes) {
    return Fail(absl::ResourceExhaustedError(
        absl::StrCat("rank ", rank(), " in ", what, ": a blob of ", blob.size(),
                     " bytes is above max_message_bytes (",
                     options_.max_message_bytes, ")")));
  }
  if (rank() != 0) {
    absl::Status sent = SendMessage(
        coordinator_,
        GatherMessage{sequence, static_cast<uint32_t>(rank()),
                      std::string(blob)},
        deadline, coordinator_name_);
    if (!sent.ok()) {
      return Fail(absl::Status(
          sent.code(),
          absl::StrCat("rank ", rank(), " in ", what, ": ", sent.message())));
    }
    ASSIGN_OR_RETURN(BootstrapMessage m, ReceiveFromCoordinator(what, deadline));
    auto* result = std::get_if<GatherResultMessage>(&m);
    if (result == nullptr || result->sequence != sequence ||
        result->blobs.size() != static_cast<size_t>(world_size())) {
      return Fail(absl::InvalidArgumentError(absl::StrCat(
          "rank ", rank(), " in ", what, ": ", coordinator_name_,
          " answered out of turn (",
          result == nullptr
              ? ExpectedGot("gather result", m)
              : absl::StrCat("sequence ", result->sequence, " with ",
                             result->blobs.size(), " blobs"),
          "): do the ranks call the collectives in the same order?")));
    }
    return std::move(result->blobs);
  }
  std::vector<std::string> blobs(world_size());
  blobs[0] = std::string(blob);
  size_t total = 1 + 8 + 4 + blob.size();
  for (int r = 1; r < world_size(); ++r) {
    const std::string peer = absl::StrCat("rank ", r);
    absl::StatusOr<BootstrapMessage> m =
        ReceiveMessage(peers_[r], options_.max_message_bytes, deadline, peer);
    if (!m.ok()) {
      return Fail(absl::Status(
          m.status().code(),
          absl::StrCat("rank 0 in ", what, ": ", m.status().message())));
    }
    auto* gather = std::get_if<GatherMessage>(&*m);
    if (gather == nullptr || gather->sequence != sequence ||
        gather->rank != static_cast<uint32_t>(r)) {
      return Fail(absl::InvalidArgumentError(absl::StrCat(
          "rank 0 in ", what, ": rank ", r, " sent ",
          gather == nullptr ? absl::StrCat("a ", MessageName(*m), " message")
                            : absl::StrCat("all-gather ", gather->sequence,
                                           " as rank ", gather->rank),
          ": do the ranks call the collectives in the same order?")));
    }
    total += 4 + gather->blob.size();
    if (total > options_.max_message_bytes) {
      return Fail(absl::ResourceExhaustedError(
          absl::StrCat("rank 0 in ", what, ": the gathered blobs reach ", total,
                       " bytes by rank ", r, ", above max_message_bytes (",
                       options_.max_message_bytes, ")")));
    }
    blobs[r] = std::move(gather->blob);
  }
  GatherResultMessage result{sequence, std::move(blobs)};
  for (int r = 1; r < world_size(); ++r) {
    absl::Status s =
        SendMessage(peers_[r], result, deadline, absl::StrCat("rank ", r));
    if (!s.ok()) {
      return Fail(absl::Status(
          s.code(), absl::StrCat("rank 0 in ", what, ": ", s.message())));
    }
  }
  return std::move(result.blobs);
}

absl::StatusOr<std::string> ProcessGroupBootstrap::Broadcast(
    absl::string_view blob, absl::Duration timeout) {
  RETURN_IF_ERROR(CheckUsable());
  const absl::Time deadline = absl::Now() + timeout;
  const uint32_t sequence = ++sequence_;
  const std::string what = absl::StrCat("broadcast ", sequence);
  if (rank() != 0) {
    ASSIGN_OR_RETURN(BootstrapMessage m, ReceiveFromCoordinator(what, deadline));
    auto* b = std::get_if<BroadcastMessage>(&m);
    if (b == nullptr || b->sequence != sequence) {
      return Fail(absl::InvalidArgumentError(absl::StrCat(
          "rank ", rank(), " in ", what, ": ", coordinator_name_,
          " answered out of turn (",
          b == nullptr ? ExpectedGot("broadcast", m)
                       : absl::StrCat("broadcast ", b->sequence),
          "): do the ranks call the collectives in the same order?")));
    }
    return std::move(b->blob);
  }
  if (blob.size() + 16 > options_.max_message_bytes) {
    return Fail(absl::ResourceExhaustedError(
        absl::StrCat("rank 0 in ", what, ": a blob of ", blob.size(),
                     " bytes is above max_message_bytes (",
                     options_.max_message_bytes, ")")));
  }
  BroadcastMessage message{sequence, std::string(blob)};
  for (int r = 1; r < world_size(); ++r) {
    absl::Status s =
        SendMessage(peers_[r], message, deadline, absl::StrCat("rank ", r));
    if (!s.ok()) {
      return Fail(absl::Status(
          s.code(), absl::StrCat("rank 0 in ", what, ": ", s.message())));
    }
  }
  return std::string(blob);
}

// --- BootstrapCoordinator ----------------------------------------------------

absl::StatusOr<std::unique_ptr<BootstrapCoordinator>>
BootstrapCoordinator::Listen(const BootstrapOptions& options) {
  RETURN_IF_ERROR(ValidateOptions(options));
  if (options.rank != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("bootstrap: rank ", options.rank,
                     " cannot be the coordinator; rank 0 is"));
  }
  ASSIGN_OR_RETURN(TcpSocket listener, ListenTcp(options.coordinator));
  return std::unique_ptr<BootstrapCoordinator>(
      new BootstrapCoordinator(options, std::move(listener)));
}

absl::StatusOr<std::unique_ptr<ProcessGroupBootstrap>>
BootstrapCoordinator::AdmitAll() {
  if (!listener_.valid()) {
    return absl::FailedPreconditionError(
        "BootstrapCoordinator::AdmitAll called twice");
  }
  auto group = AdmitAllListening();
  // Late connections are refused by the kernel from now on.
  listener_.Close();
  return group;
}

absl::StatusOr<std::unique_ptr<ProcessGroupBootstrap>>
BootstrapCoordinator::AdmitAllListening() {
  const BootstrapOptions& o = options_;
  const absl::Time start = absl::Now();
  const absl::Time deadline = start + o.join_timeout;
  const std::string listening = HostPort{o.coordinator.host, port()}.ToString();
  std::vector<TcpSocket> peers(o.world_size);
  std::vector<std::string> where(o.world_size);  // each rank's address
  std::vector<std::string> refused;  // the first strangers, for the timeout
  int refused_count = 0;
  auto note_refusal = [&](const absl::Status& why) {
    if (++refused_count <= 8) refused.push_back(std::string(why.message()));
  };
  int joined = 1;
  // Ends the job: tells `offender` (may be null) and every admitted rank.
  auto fail = [&](const TcpSocket* offender, absl::Status status) {
    if (offender != nullptr) SendRefusal(*offender, status, "the refused rank");
    for (int r = 1; r < o.world_size; ++r) {
      if (peers[r].valid())
        SendRefusal(peers[r], status, absl::StrCat("rank ", r));
    }
    return status;
  };
  while (joined < o.world_size) {
    absl::StatusOr<TcpSocket> accepted = AcceptTcp(listener_, deadline);
    if (!accepted.ok()) {
      if (accepted.status().code() != absl::StatusCode::kDeadlineExceeded) {
        return fail(nullptr, accepted.status());
      }
      std::string message = absl::StrCat(
          MissingRanks(peers), " of ", o.world_size,
          " did not join the coordinator at ", listening, " within ",
          Seconds(o.join_timeout), " (", joined, " joined)");
      if (!refused.empty()) {
        absl::StrAppend(&message, "; refused: ", absl::StrJoin(refused, "; "));
        if (refused_count > 8) {
          absl::StrAppend(&message, "; and ", refused_count - 8,
                          " more connections");
        }
      }
      return fail(nullptr, absl::DeadlineExceededError(message));
    }
    TcpSocket conn = *std::move(accepted);
    const std::string address = conn.PeerAddress();
    const std::string peer = absl::StrCat("a connection from ", address);
    // Rule 1: a well-formed hello, soon.
    absl::StatusOr<BootstrapMessage> m = ReceiveMessage(
        conn, std::min(o.max_message_bytes, kMaxHelloBytes),
        std::min(deadline, absl::Now() + o.handshake_timeout), peer);
    const HelloMessage* hello =
        m.ok() ? std::get_if<HelloMessage>(&*m) : nullptr;
    if (hello == nullptr) {
      absl::Status why =
          m.ok() ? absl::InvalidArgumentError(absl::StrCat(
                       "from ", peer, ": ", ExpectedGot("hello", *m)))
                 : m.status();
      note_refusal(why);
      SendRefusal(conn, why, peer);
      continue;
    }
    // Rule 2: the job's token.
    if (!ConstantTimeEquals(hello->job_token, o.job_token)) {
      absl::Status why = absl::PermissionDeniedError(absl::StrCat(
          "wrong job token from ", address, " (claiming rank ", hello->rank,
          "): every rank needs the same ", kEnvJobToken));
      note_refusal(why);
      SendRefusal(conn, why, peer);
      continue;
    }
    // Rule 3: this job's rank, agreeing with rank 0.
    const std::string who =
        absl::StrCat("rank ", hello->rank, " (from ", address, ")");
    if (hello->protocol_version != kBootstrapProtocolVersion) {
      return fail(&conn, absl::FailedPreconditionError(absl::StrCat(
                             who, " speaks bootstrap protocol ",
                             hello->protocol_version, ", rank 0 speaks ",
                             kBootstrapProtocolVersion,
                             ": run the same sluice on every rank")));
    }
    if (hello->world_size != static_cast<uint32_t>(o.world_size)) {
      return fail(&conn, absl::FailedPreconditionError(absl::StrCat(
                             who, " was started with world size ",
                             hello->world_size, ", rank 0 with ", o.world_size,
                             ": every rank needs the same world size")));
    }
    if (hello->rank == 0 ||
        hello->rank >= static_cast<uint32_t>(o.world_size)) {
      return fail(&conn,
                  absl::InvalidArgumentError(absl::StrCat(
                      who, ": a joining rank must be in 1..", o.world_size - 1,
                      hello->rank == 0 ? " (rank 0 is the coordinator)" : "")));
    }
    if (peers[hello->rank].valid()) {
      return fail(&conn, absl::AlreadyExistsError(absl::StrCat(
                             "rank ", hello->rank, " joined twice, from ",
                             where[hello->rank], " and from ", address,
                             ": two processes were given the same rank")));
    }
    std::string difference =
        DescribeFingerprintDifference(o.fingerprint, hello->fingerprint);
    if (!difference.empty()) {
      return fail(
          &conn,
          absl::FailedPreconditionError(absl::StrCat(
              who, " has a different fingerprint from rank 0: ", difference,
              ": every rank must load the same model and config")));
    }
    where[hello->rank] = address;
    peers[hello->rank] = std::move(conn);
    ++joined;
  }
  const absl::Time welcome_deadline = absl::Now() + o.collective_timeout;
  for (int r = 1; r < o.world_size; ++r) {
    absl::Status s = SendMessage(
        peers[r], WelcomeMessage{static_cast<uint32_t>(o.world_size)},
        welcome_deadline, absl::StrCat("rank ", r));
    if (!s.ok()) return fail(nullptr, s);
  }
  return std::unique_ptr<ProcessGroupBootstrap>(
      new ProcessGroupBootstrap(o, std::move(peers), TcpSocket()));
}

absl::StatusOr<std::unique_ptr<ProcessGroupBootstrap>> JoinProcessGroup(
    const BootstrapOptions& options) {
  RETURN_IF_ERROR(ValidateOptions(options));
  if (options.world_size == 1) {
    // Alone: nothing to listen for.
    return std::unique_ptr<ProcessGroupBootstrap>(
        new ProcessGroupBootstrap(options, {}, TcpSocket()));
  }
  if (options.rank == 0) {
    ASSIGN_OR_RETURN(auto coordinator, BootstrapCoordinator::Listen(options));
    return coordinator->AdmitAll();
  }
  const absl::Time deadline = absl::Now() + options.join_timeout;
  const std::string name =
      absl::StrCat("the coordinator at ", options.coordinator.ToString());
  const std::string prefix =
      absl::StrCat("rank ", options.rank, " joining ", name, ": ");
  auto with_prefix = [&](const absl::Status& s) {
    return absl::Status(s.code(), absl::StrCat(prefix, s.message()));
  };
  absl::StatusOr<TcpSocket> conn = ConnectTcp(options.coordinator, deadline);
  if (!conn.ok()) return with_prefix(conn.status());
  HelloMessage hello{kBootstrapProtocolVersion,
                     static_cast<uint32_t>(options.world_size),
                     static_cast<uint32_t>(options.rank), options.job_token,
                     options.fingerprint};
  if (absl::Status s = SendMessage(*conn, hello, deadline, name); !s.ok()) {
    return with_prefix(s);
  }
  absl::StatusOr<BootstrapMessage> m =
      ReceiveMessage(*conn, options.max_message_bytes, deadline, name);
  if (!m.ok()) return with_prefix(m.status());
  if (const auto* refusal = std::get_if<RefusalMessage>(&*m)) {
    return RefusalToStatus(*refusal, absl::StrCat(prefix, "refused: "));
  }
  const auto* welcome = std::get_if<WelcomeMessage>(&*m);
  if (welcome == nullptr ||
      welcome->world_size != static_cast<uint32_t>(options.world_size)) {
    return with_prefix(absl::InvalidArgumentError(
        welcome == nullptr
            ? ExpectedGot("welcome", *m)
            : absl::StrCat("welcomed to a world of ", welcome->world_size,
                           ", not ", options.world_size)));
  }
  return std::unique_ptr<ProcessGroupBootstrap>(
      new ProcessGroupBootstrap(options, {}, *std::move(conn)));
}

}  // namespace sluice
