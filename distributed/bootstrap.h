// The process-group bootstrap of sluice's environment-variable launcher:
// rank 0 is the coordinator, listening on the address the user names
// (SLUICE_COORDINATOR); every other rank connects to it and says who it is
// (HelloMessage: job token, world size, rank, the job's fingerprint). Once
// every rank has joined, they can all-gather small blobs (each rank's device
// report) and receive a broadcast from rank 0 (NCCL's unique id). It
// carries only such small messages, over one TCP connection per rank to
// rank 0; tensors go by NCCL or MPI (issue 30).
//
//   ASSIGN_OR_RETURN(ProcessGroupInfo me, DetectProcessGroup());
//   ASSIGN_OR_RETURN(BootstrapOptions options,
//                    BootstrapOptionsFor(me, {{"model", model_digest}}));
//   ASSIGN_OR_RETURN(auto group, JoinProcessGroup(options));
//   ASSIGN_OR_RETURN(std::vector<std::string> all, group->AllGather(mine));
//   ASSIGN_OR_RETURN(std::string id, group->Broadcast(me.rank == 0 ? id : ""));
//
// Who may join (rank 0 checks, in this order, and refuses with a Refusal
// message the peer turns into its error):
//  1. A connection's first message must be a well-formed hello within
//     `handshake_timeout` and `kMaxHelloBytes`; else that connection is
//     dropped (a stranger: rank 0 goes on waiting, and names it if the job
//     then times out).
//  2. The job token must match (compared in constant time): PERMISSION_DENIED
//     to the peer; rank 0 goes on waiting, as in 1.
//  3. From here the peer is of this job, and a disagreement ends the whole
//     job on every rank that has joined: another protocol version or world
//     size (FAILED_PRECONDITION), a rank outside 1..world_size-1
//     (INVALID_ARGUMENT), a rank that has joined already (ALREADY_EXISTS),
//     a fingerprint that differs, naming the part and both values
//     (FAILED_PRECONDITION).
//  4. Ranks that have not joined by `join_timeout` are named in a
//     DEADLINE_EXCEEDED on rank 0 and on every rank that joined.
// After that, a peer that closes its connection, stops mid-message, sends
// a frame above `max_message_bytes` or calls the collectives in another
// order fails the collective on every rank, naming it.
//
// Thread safety: a ProcessGroupBootstrap is used by one thread at a time
// (its collectives are called in the same order on every rank).
#ifndef SLUICE_DISTRIBUTED_BOOTSTRAP_H_
#define SLUICE_DISTRIBUTED_BOOTSTRAP_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "distributed/bootstrap_message.h"
#include "distributed/process_group_info.h"
#include "distributed/tcp_socket.h"

namespace sluice {

struct BootstrapOptions {
  int rank = 0;
  int world_size = 1;
  // Rank 0 listens here (port 0: any free port, for tests); the others
  // connect here.
  HostPort coordinator;
  // The same secret in every rank (ProcessGroupInfo::job_token).
  std::string job_token;
  // What every rank must agree on, by name ("model", "config"): digests
  // the caller computes. Unique names, kMaxFingerprintParts at most.
  std::vector<FingerprintPart> fingerprint;
  // Rank 0: how long it waits for every rank to join. Other ranks: how
  // long they try to connect and wait to be admitted.
  absl::Duration join_timeout = absl::Minutes(5);
  // How long rank 0 waits for a new connection's hello.
  absl::Duration handshake_timeout = absl::Seconds(10);
  // How long a collective waits for the other ranks.
  absl::Duration collective_timeout = absl::Minutes(5);
  // Cap on any message body, an all-gather's result included.
  size_t max_message_bytes = kDefaultMaxMessageBytes;
};

// Options from a detected process group (its rank, world size,
// coordinator and token). INVALID_ARGUMENT when a world of more than one
// has no coordinator or no token (as under MPI, until MPI can carry the
// bootstrap).
absl::StatusOr<BootstrapOptions> BootstrapOptionsFor(
    const ProcessGroupInfo& info, std::vector<FingerprintPart> fingerprint);

// A joined process group: collectives over the bootstrap's connections.
class ProcessGroupBootstrap {
 public:
  ProcessGroupBootstrap(const ProcessGroupBootstrap&) = delete;
  ProcessGroupBootstrap& operator=(const ProcessGroupBootstrap&) = delete;

  int rank() const { return options_.rank; }
  int world_size() const { return options_.world_size; }

  // Every rank's `blob`, in rank order, on every rank.
  absl::StatusOr<std::vector<std::string>> AllGather(absl::string_view blob) {
    return AllGather(blob, options_.collective_timeout);
  }
  // Rank 0's `blob` on every rank (other ranks' `blob` is ignored).
  absl::StatusOr<std::string> Broadcast(absl::string_view blob) {
    return Broadcast(blob, options_.collective_timeout);
  }
  // The same with a timeout of their own instead of collective_timeout
  // (absl::InfiniteDuration(): a worker waiting for the next step).
  absl::StatusOr<std::vector<std::string>> AllGather(absl::string_view blob,
                                                     absl::Duration timeout);
  absl::StatusOr<std::string> Broadcast(absl::string_view blob,
                                        absl::Duration timeout);

 private:
  friend class BootstrapCoordinator;
  friend absl::StatusOr<std::unique_ptr<ProcessGroupBootstrap>>
  JoinProcessGroup(const BootstrapOptions& options);
  ProcessGroupBootstrap(BootstrapOptions options, std::vector<TcpSocket> peers,
                        TcpSocket coordinator);

  // Receives the coordinator's answer to collective `sequence` (rank > 0).
  absl::StatusOr<BootstrapMessage> ReceiveFromCoordinator(
      absl::string_view what, absl::Time deadline);
  // Records `status` as the group's failure, tells every peer (rank 0) and
  // closes the connections; returns `status`.
  absl::Status Fail(absl::Status status);
  absl::Status CheckUsable() const;

  // Fixed after construction.
  const BootstrapOptions options_;
  std::string coordinator_name_;  // "the coordinator at host:port"
  // Rank 0: a connection per rank (index 0 unused). Others: none.
  std::vector<TcpSocket> peers_;
  // Rank > 0: the connection to rank 0.
  TcpSocket coordinator_;
  uint32_t sequence_ = 0;
  absl::Status failure_;
};

// Rank 0's side before every rank has joined: listening, so that its port
// is known (a test asks for port 0 and gives the others the port).
class BootstrapCoordinator {
 public:
  // Binds options.coordinator. INVALID_ARGUMENT for bad options (also on
  // a rank other than 0), UNAVAILABLE when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<BootstrapCoordinator>> Listen(
      const BootstrapOptions& options);
  // The bound port (0 after AdmitAll).
  int port() const { return listener_.LocalPort(); }
  // Admits every rank (rules 1-4 of this header), sends each its welcome,
  // and stops listening. Call once.
  absl::StatusOr<std::unique_ptr<ProcessGroupBootstrap>> AdmitAll();

 private:
  absl::StatusOr<std::unique_ptr<ProcessGroupBootstrap>> AdmitAllListening();

  explicit BootstrapCoordinator(BootstrapOptions options, TcpSocket listener)
      : options_(std::move(options)), listener_(std::move(listener)) {}
  const BootstrapOptions options_;
  TcpSocket listener_;
};

// A world of one: a group at once, listening on nothing (no coordinator or
// token needed). Rank 0: Listen, then AdmitAll. Other ranks: connect (retrying
// until rank 0 listens), say hello, wait for the welcome. A refusal comes back
// as its status, prefixed with the coordinator's address.
absl::StatusOr<std::unique_ptr<ProcessGroupBootstrap>> JoinProcessGroup(
    const BootstrapOptions& options);

// "" when `theirs` equals `mine`; otherwise what differs, part by part
// ("'model' is 0a1b2c3d... (32 bytes) against rank 0's 9f8e7d6c... (32
// bytes)").
std::string DescribeFingerprintDifference(
    const std::vector<FingerprintPart>& mine,
    const std::vector<FingerprintPart>& theirs);

}  // namespace sluice

#endif  // SLUICE_DISTRIBUTED_BOOTSTRAP_H_
