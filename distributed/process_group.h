// ProcessGroup: the processes of one job as a session's steps see them:
// collectives for small control messages (a step's signature, every rank's
// status) and, where the transport has them, point-to-point messages for
// host tensors that cross processes. Two transports: MPI, for a job started
// by mpirun (mpi_process_group.h; tensors too), and sluice's own bootstrap
// (bootstrap.h; control messages only: tensors then go by NCCL).
//
//   ASSIGN_OR_RETURN(std::unique_ptr<ProcessGroup> group,
//                    ConnectProcessGroup(info, fingerprint, options));
//   ASSIGN_OR_RETURN(std::vector<std::string> reports,
//                    group->AllGather(my_report, absl::Minutes(1)));
//   RETURN_IF_ERROR(group->Send(/*dst=*/1, /*tag=*/7, data, bytes));
//
// Every wait is bounded by a deadline; a rank that fails a step tells the
// others with SendAbort, which ends their Recv at once (ABORTED, naming
// it), so no rank waits for a peer that will not send.
//
// Several steps may be in flight at once (rank 0 runs the first stage of
// step i+1 while another rank runs the second stage of step i): each step
// has a channel (StepChannel), its messages' tags and its abort, so the
// messages and aborts of steps in flight never meet.
//
// Thread safety: where HasMessages(), Send, Recv, WaitSends, SendAbort,
// DiscardAbort and Announce may be called from several threads at once
// (one per step in flight); AllGather and Broadcast from one thread at a
// time, in the same order on every rank.
#ifndef SLUICE_DISTRIBUTED_PROCESS_GROUP_H_
#define SLUICE_DISTRIBUTED_PROCESS_GROUP_H_

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

namespace sluice {

// Tags of point-to-point messages are below this; the transports keep the
// tags above it for their own control messages.
inline constexpr int kMaxMessageTag = 1 << 24;
// Steps in flight at once, at most: tags [c * kTagsPerStep, (c + 1) *
// kTagsPerStep) belong to channel c, the step's number modulo this.
inline constexpr int kStepChannels = 64;
inline constexpr int kTagsPerStep = kMaxMessageTag / kStepChannels;
inline int StepChannel(uint64_t step) {
  return static_cast<int>(step % kStepChannels);
}
// The tag of message `t` (0 <= t < kTagsPerStep) of step `step`.
inline int StepTag(uint64_t step, int t) {
  return StepChannel(step) * kTagsPerStep + t;
}

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;

  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // "Open MPI v4.1.4 (mpirun)", "sluice bootstrap at 127.0.0.1:29500".
  virtual std::string Describe() const = 0;

  // Every rank's `blob`, in rank order, on every rank.
  virtual absl::StatusOr<std::vector<std::string>> AllGather(
      absl::string_view blob, absl::Duration timeout) = 0;
  // Rank 0's `blob` on every rank; the others' `blob` is ignored.
  // absl::InfiniteDuration() waits as long as it takes (a worker waiting
  // for rank 0's next step).
  virtual absl::StatusOr<std::string> Broadcast(absl::string_view blob,
                                                absl::Duration timeout) = 0;

  // Whether Send and Recv carry host memory (MPI: yes; the bootstrap: no).
  virtual bool HasMessages() const = 0;
  // Starts sending `bytes` at `data` to rank `dst` with `tag` (0 <= tag <
  // kMaxMessageTag) and returns; `data` must stay valid until WaitSends
  // returns. Messages with the same (source, destination, tag) arrive in
  // the order they were sent; any size (MPI: in pieces of
  // ProcessGroupOptions::max_message_bytes). UNIMPLEMENTED where
  // !HasMessages().
  virtual absl::Status Send(int dst, int tag, const void* data,
                            size_t bytes) = 0;
  // Receives the next message from `src` with `tag` into `data` (at most
  // `capacity` bytes) and returns its size. Fails with ABORTED, naming the
  // rank, as soon as some rank calls SendAbort for a step of the tag's
  // channel; DEADLINE_EXCEEDED at
  // `deadline`, naming `src`; INVALID_ARGUMENT when the message is larger
  // than `capacity`.
  virtual absl::StatusOr<size_t> Recv(int src, int tag, void* data,
                                      size_t capacity, absl::Time deadline) = 0;
  // Waits until every Send so far with a tag of `step`'s channel, and its
  // SendAbort, has been delivered (the buffers may be reused).
  // DEADLINE_EXCEEDED at `deadline`.
  virtual absl::Status WaitSends(uint64_t step, absl::Time deadline) = 0;
  // Tells every other rank that this one failed step `step`: their Recv
  // of a tag of the step's channel returns ABORTED naming this rank.
  // Non-blocking.
  virtual absl::Status SendAbort(uint64_t step) = 0;
  // Consumes the abort message of step `step` that rank `src` sent (after
  // the step, so it does not end a Recv of a later one).
  virtual absl::Status DiscardAbort(int src, uint64_t step,
                                    absl::Time deadline) = 0;

  // Rank 0: sends `blob` (a step's request) to every other rank, which
  // reads rank 0's blobs in the order sent with NextAnnouncement. Where
  // HasMessages() it returns without waiting for them, so step i+1's
  // request can go out before step i's status exchange; otherwise it is
  // Broadcast (a collective: whole steps then run one at a time).
  virtual absl::Status Announce(absl::string_view blob,
                                absl::Duration timeout);
  // The other ranks: rank 0's next Announce, waiting as long as it takes.
  virtual absl::StatusOr<std::string> NextAnnouncement();
};

struct ProcessGroupOptions {
  // How long the ranks wait for each other to join.
  absl::Duration join_timeout = absl::Minutes(5);
  // How long a control collective waits (a step's status exchange).
  absl::Duration collective_timeout = absl::Minutes(5);
  // MPI: a message larger than this goes as several pieces of this size
  // (MPI counts are ints), in order on its tag; tests set it small.
  // REQUIRES: 0 < max_message_bytes <= INT_MAX.
  size_t max_message_bytes = size_t{1} << 30;
};

// The process group of `info`'s job: over MPI when the job was started by
// mpirun (Open MPI's or PMIx's variables) and sluice was built with MPI;
// else over the bootstrap (SLUICE_COORDINATOR and SLUICE_JOB_TOKEN needed;
// `fingerprint` checked as bootstrap.h says; under MPI the caller compares
// it itself). A world of one: a group of one, with no transport.
absl::StatusOr<std::unique_ptr<ProcessGroup>> ConnectProcessGroup(
    const ProcessGroupInfo& info, std::vector<FingerprintPart> fingerprint,
    const ProcessGroupOptions& options = {});

}  // namespace sluice

#endif  // SLUICE_DISTRIBUTED_PROCESS_GROUP_H_
