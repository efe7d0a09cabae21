// The MPI process group: non-blocking MPI calls polled against deadlines.
#include "distributed/mpi_process_group.h"

#include <climits>
#include <cstdlib>
#include <algorithm>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "core/status_macros.h"
#include "distributed/mpi_library.h"

namespace sluice {
namespace {

// Above every tensor tag (process_group.h): one abort tag per step
// channel, then the announcements (steps' requests).
constexpr int kAbortTag = kMaxMessageTag + 1;
constexpr int kAnnounceTag = kAbortTag + kStepChannels;

int AbortTag(int channel) { return kAbortTag + channel; }

// MPI's entry points. REQUIRES: LoadMpi() succeeded (InitMpiOnce and
// MpiLibraryVersion check it first).
const MpiApi& Mpi() { return **LoadMpi(); }

std::string MpiErrorText(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (Mpi().Error_string(code, text, &length) != MPI_SUCCESS) {
    return absl::StrCat("MPI error ", code);
  }
  return std::string(text, length);
}

absl::Status MpiError(int code, absl::string_view what) {
  return absl::InternalError(
      absl::StrCat("MPI ", what, " failed: ", MpiErrorText(code)));
}

#define SLUICE_MPI_CALL(call, what)                       \
  do {                                                    \
    if (int sluice_mpi_rc = (call); sluice_mpi_rc != MPI_SUCCESS) { \
      return MpiError(sluice_mpi_rc, what);               \
    }                                                     \
  } while (false)

void FinalizeMpi() {
  int finalized = 0;
  Mpi().Finalized(&finalized);
  if (!finalized) Mpi().Finalize();
}

// Initialises MPI once per process (unless someone else did: mpi4py, the
// program itself), asking for MPI_THREAD_MULTIPLE, and finalises it at exit
// when sluice initialised it.
absl::Status InitMpiOnce() {
  static const absl::Status* status = [] {
    if (const absl::StatusOr<const MpiApi*>& api = LoadMpi(); !api.ok()) {
      return new absl::Status(absl::FailedPreconditionError(absl::StrCat(
          "this process was started by an MPI launcher, but sluice cannot "
          "load MPI: ", api.status().message(), ". Install the MPI whose "
          "mpirun started the job (Open MPI 4 or later), or start the "
          "processes with SLUICE_RANK, SLUICE_WORLD_SIZE, SLUICE_COORDINATOR "
          "and SLUICE_JOB_TOKEN instead")));
    }
    int initialized = 0;
    Mpi().Initialized(&initialized);
    int provided = MPI_THREAD_SINGLE;
    if (initialized) {
      Mpi().Query_thread(&provided);
    } else {
      int rc = Mpi().Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE,
                               &provided);
      if (rc != MPI_SUCCESS) {
        return new absl::Status(MpiError(rc, "MPI_Init_thread"));
      }
      std::atexit(FinalizeMpi);
    }
    if (provided < MPI_THREAD_MULTIPLE) {
      return new absl::Status(absl::FailedPreconditionError(absl::StrCat(
          "the MPI library gives thread level ", provided,
          ", below MPI_THREAD_MULTIPLE, which sluice's sessions need")));
    }
    return new absl::Status();
  }();
  return *status;
}

// Waits for `request` to complete, polling: yielding first, then short
// sleeps (a step's messages are usually quick; a worker waiting for the
// next step sleeps). DEADLINE_EXCEEDED at `deadline`, the request left
// pending. `between` runs between polls; an error from it ends the wait.
absl::Status PollRequest(MPI_Request* request, MPI_Status* status,
                         absl::Time deadline, absl::string_view what,
                         const std::function<absl::Status()>& between = {}) {
  const absl::Time start = absl::Now();
  while (true) {
    int done = 0;
    SLUICE_MPI_CALL(Mpi().Test(request, &done, status), what);
    if (done) return absl::OkStatus();
    if (between) RETURN_IF_ERROR(between());
    const absl::Time now = absl::Now();
    if (now >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat(what, ": not done after ",
                       absl::FormatDuration(now - start)));
    }
    // The first 100 ms yield the core instead of sleeping: a sleeping
    // process wakes late on a busy machine (a step of two ranks on the
    // 2-core VM took 28 ms instead of 2 with 50 us sleeps), while a yield
    // leaves the core to whoever needs it. Longer waits (a worker waiting
    // for the next step) sleep, so an idle rank costs no CPU.
    if (now - start < absl::Milliseconds(100)) {
      std::this_thread::yield();
    } else {
      absl::SleepFor(absl::Microseconds(200));
    }
  }
}

class MpiProcessGroup final : public ProcessGroup {
 public:
  MpiProcessGroup(MPI_Comm comm, int rank, int size, std::string library,
                  size_t piece)
      : comm_(comm),
        rank_(rank),
        size_(size),
        library_(std::move(library)),
        piece_(piece) {}
  ~MpiProcessGroup() override {
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    bool pending = false;
    for (int c = 0; c < kStepChannels; ++c) {
      if (Failure().ok()) WaitSends(c, deadline).IgnoreError();
    }
    if (Failure().ok()) WaitAnnouncements(deadline).IgnoreError();
    {
      absl::MutexLock lock(&mu_);
      for (const auto& channel : sends_) pending = pending || !channel.empty();
      pending = pending || !announce_sends_.empty();
    }
    // Requests still pending (a broken job) keep the communicator alive;
    // MPI_Finalize at exit deals with them.
    if (!pending && Failure().ok()) Mpi().Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int world_size() const override { return size_; }
  std::string Describe() const override {
    return absl::StrCat(library_, " (mpirun), ", size_, " ranks");
  }

  absl::StatusOr<std::vector<std::string>> AllGather(
      absl::string_view blob, absl::Duration timeout) override {
    RETURN_IF_ERROR(Failure());
    const absl::Time deadline = absl::Now() + timeout;
    const std::string what = absl::StrCat("rank ", rank_, ": all-gather");
    int64_t mine = static_cast<int64_t>(blob.size());
    std::vector<int64_t> sizes(size_);
    MPI_Request request;
    SLUICE_MPI_CALL(Mpi().Iallgather(&mine, 1, Mpi().int64, sizes.data(), 1,
                                   Mpi().int64, comm_, &request),
                    what);
    RETURN_IF_ERROR(Broken(PollRequest(&request, MPI_STATUS_IGNORE, deadline,
                                       what)));
    std::vector<int> counts(size_), displacements(size_);
    int64_t total = 0;
    for (int r = 0; r < size_; ++r) {
      if (sizes[r] < 0 || total + sizes[r] > INT_MAX) {
        return Broken(absl::ResourceExhaustedError(absl::StrCat(
            what, ": the blobs exceed ", INT_MAX, " bytes by rank ", r)));
      }
      counts[r] = static_cast<int>(sizes[r]);
      displacements[r] = static_cast<int>(total);
      total += sizes[r];
    }
    std::string all(total, '\0');
    SLUICE_MPI_CALL(
        Mpi().Iallgatherv(blob.data(), static_cast<int>(mine), Mpi().byte,
                        all.data(), counts.data(), displacements.data(),
                        Mpi().byte, comm_, &request),
        what);
    RETURN_IF_ERROR(Broken(PollRequest(&request, MPI_STATUS_IGNORE, deadline,
                                       what)));
    std::vector<std::string> out(size_);
    for (int r = 0; r < size_; ++r) {
      out[r] = all.substr(displacements[r], counts[r]);
    }
    return out;
  }

  absl::StatusOr<std::string> Broadcast(absl::string_view blob,
                                        absl::Duration timeout) override {
    RETURN_IF_ERROR(Failure());
    const absl::Time deadline = absl::Now() + timeout;
    const std::string what = absl::StrCat("rank ", rank_, ": broadcast");
    int64_t size = rank_ == 0 ? static_cast<int64_t>(blob.size()) : 0;
    if (size > INT_MAX) {
      return absl::ResourceExhaustedError(
          absl::StrCat(what, ": ", size, " bytes is above ", INT_MAX));
    }
    MPI_Request request;
    SLUICE_MPI_CALL(Mpi().Ibcast(&size, 1, Mpi().int64, 0, comm_, &request),
                    what);
    RETURN_IF_ERROR(Broken(PollRequest(&request, MPI_STATUS_IGNORE, deadline,
                                       what)));
    std::string out = rank_ == 0 ? std::string(blob) : std::string(size, '\0');
    if (size > 0) {
      SLUICE_MPI_CALL(Mpi().Ibcast(out.data(), static_cast<int>(size), Mpi().byte,
                                 0, comm_, &request),
                      what);
      RETURN_IF_ERROR(Broken(PollRequest(&request, MPI_STATUS_IGNORE,
                                         deadline, what)));
    }
    return out;
  }

  bool HasMessages() const override { return true; }

  absl::Status Send(int dst, int tag, const void* data,
                    size_t bytes) override {
    RETURN_IF_ERROR(Failure());
    RETURN_IF_ERROR(CheckPeer(dst, tag));
    // Pieces of piece_ bytes, in order on the tag; a message whose last
    // piece is full ends with an empty one, so the receiver knows it ended
    // (Recv stops at the first piece shorter than piece_). A message below
    // piece_ bytes is one piece, as any MPI program would send it.
    const char* at = static_cast<const char*>(data);
    size_t left = bytes;
    while (true) {
      const size_t n = std::min(left, piece_);
      MPI_Request request;
      SLUICE_MPI_CALL(Mpi().Isend(at, static_cast<int>(n), Mpi().byte, dst, tag,
                                  comm_, &request),
                      absl::StrCat("send to rank ", dst));
      {
        absl::MutexLock lock(&mu_);
        sends_[tag / kTagsPerStep].push_back(request);
      }
      if (n < piece_) return absl::OkStatus();
      at += n;
      left -= n;
    }
  }

  absl::StatusOr<size_t> Recv(int src, int tag, void* data, size_t capacity,
                              absl::Time deadline) override {
    RETURN_IF_ERROR(Failure());
    RETURN_IF_ERROR(CheckPeer(src, tag));
    // The pieces Send cut the message into, up to the first short one.
    char* at = static_cast<char*>(data);
    size_t got = 0;
    while (true) {
      const size_t want = std::min(capacity - got, piece_);
      ASSIGN_OR_RETURN(const size_t n, RecvPiece(src, tag, at + got, want, deadline));
      got += n;
      if (n < piece_) return got;
    }
  }

  // One MPI message of at most `bytes` bytes (a piece of one Recv).
  absl::StatusOr<size_t> RecvPiece(int src, int tag, void* data, size_t bytes,
                                   absl::Time deadline) {
    const int abort_tag = AbortTag(tag / kTagsPerStep);
    const int count = static_cast<int>(bytes);
    const std::string what =
        absl::StrCat("rank ", rank_, ": receive from rank ", src);
    MPI_Request request;
    SLUICE_MPI_CALL(
        Mpi().Irecv(data, count, Mpi().byte, src, tag, comm_, &request), what);
    MPI_Status status;
    int aborted_by = -1;
    absl::Status s = PollRequest(&request, &status, deadline, what, [&] {
      int flag = 0;
      MPI_Status probe;
      SLUICE_MPI_CALL(
          Mpi().Iprobe(MPI_ANY_SOURCE, abort_tag, comm_, &flag, &probe), what);
      if (flag) {
        aborted_by = probe.MPI_SOURCE;
        return absl::AbortedError("");
      }
      return absl::OkStatus();
    });
    if (!s.ok() && s.code() != absl::StatusCode::kAborted &&
        s.code() != absl::StatusCode::kDeadlineExceeded) {
      return s;  // MPI's own error (a message larger than `capacity`)
    }
    if (!s.ok()) {
      // Cancel the receive; a message that arrived meanwhile is kept.
      Mpi().Cancel(&request);
      Mpi().Wait(&request, &status);
      int cancelled = 0;
      Mpi().Test_cancelled(&status, &cancelled);
      if (cancelled && aborted_by >= 0) {
        return absl::AbortedError(
            absl::StrCat(what, ": rank ", aborted_by, " failed the step"));
      }
      if (cancelled) {
        return absl::DeadlineExceededError(absl::StrCat(
            what, ": nothing arrived by the deadline (", s.message(),
            "); is rank ", src, " alive?"));
      }
    }
    int received = 0;
    Mpi().Get_count(&status, Mpi().byte, &received);
    return static_cast<size_t>(received);
  }

  absl::Status WaitSends(uint64_t step, absl::Time deadline) override {
    const int channel = StepChannel(step);
    std::vector<MPI_Request> requests;
    {
      absl::MutexLock lock(&mu_);
      requests.swap(sends_[channel]);
    }
    if (requests.empty()) return absl::OkStatus();
    const std::string what = absl::StrCat("rank ", rank_, ": sends");
    while (true) {
      int done = 0;
      SLUICE_MPI_CALL(Mpi().Testall(static_cast<int>(requests.size()),
                                  requests.data(), &done, MPI_STATUSES_IGNORE),
                      what);
      if (done) break;
      if (absl::Now() >= deadline) {
        absl::MutexLock lock(&mu_);
        const size_t n = requests.size();
        // Kept, so that the communicator outlives them.
        sends_[channel].insert(sends_[channel].end(), requests.begin(),
                               requests.end());
        return BrokenLocked(absl::DeadlineExceededError(absl::StrCat(
            what, ": ", n, " messages not delivered by the deadline")));
      }
      std::this_thread::yield();
    }
    absl::MutexLock lock(&mu_);
    abort_payloads_[channel].clear();
    return absl::OkStatus();
  }

  absl::Status SendAbort(uint64_t step) override {
    RETURN_IF_ERROR(Failure());
    const int channel = StepChannel(step);
    absl::MutexLock lock(&mu_);
    abort_payloads_[channel].push_back(step);
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      MPI_Request request;
      SLUICE_MPI_CALL(Mpi().Isend(&abort_payloads_[channel].back(), 1,
                                Mpi().uint64, r, AbortTag(channel), comm_,
                                &request),
                      absl::StrCat("abort to rank ", r));
      sends_[channel].push_back(request);
    }
    return absl::OkStatus();
  }

  absl::Status DiscardAbort(int src, uint64_t step,
                            absl::Time deadline) override {
    RETURN_IF_ERROR(Failure());
    const std::string what = absl::StrCat("rank ", rank_,
                                          ": abort message of rank ", src);
    while (true) {
      uint64_t got = 0;
      MPI_Request request;
      SLUICE_MPI_CALL(Mpi().Irecv(&got, 1, Mpi().uint64, src,
                                AbortTag(StepChannel(step)), comm_, &request),
                      what);
      absl::Status s = PollRequest(&request, MPI_STATUS_IGNORE, deadline, what);
      if (!s.ok()) {
        Mpi().Cancel(&request);
        Mpi().Wait(&request, MPI_STATUS_IGNORE);
        return Broken(s);
      }
      if (got >= step) return absl::OkStatus();  // older ones: read on
    }
  }

  absl::Status Announce(absl::string_view blob,
                        absl::Duration timeout) override {
    RETURN_IF_ERROR(Failure());
    if (blob.size() > static_cast<size_t>(INT_MAX)) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "rank ", rank_, ": an announcement of ", blob.size(), " bytes"));
    }
    absl::MutexLock lock(&mu_);
    // What earlier announcements sent is let go once all of it arrived.
    RETURN_IF_ERROR(ReleaseDeliveredAnnouncements().status());
    announce_blobs_.emplace_back(blob);
    const std::string& kept = announce_blobs_.back();
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      MPI_Request request;
      SLUICE_MPI_CALL(Mpi().Isend(kept.data(), static_cast<int>(kept.size()),
                                Mpi().byte, r, kAnnounceTag, comm_, &request),
                      absl::StrCat("announcement to rank ", r));
      announce_sends_.push_back(request);
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> NextAnnouncement() override {
    RETURN_IF_ERROR(Failure());
    const std::string what =
        absl::StrCat("rank ", rank_, ": waiting for rank 0's next step");
    const absl::Time start = absl::Now();
    while (true) {
      int flag = 0;
      MPI_Message message;
      MPI_Status status;
      SLUICE_MPI_CALL(
          Mpi().Improbe(0, kAnnounceTag, comm_, &flag, &message, &status), what);
      if (flag) {
        int count = 0;
        Mpi().Get_count(&status, Mpi().byte, &count);
        std::string blob(count, '\0');
        SLUICE_MPI_CALL(Mpi().Mrecv(blob.data(), count, Mpi().byte, &message,
                                  MPI_STATUS_IGNORE),
                        what);
        return blob;
      }
      // As PollRequest: yield at first, then sleep (an idle worker).
      if (absl::Now() - start < absl::Milliseconds(100)) {
        std::this_thread::yield();
      } else {
        absl::SleepFor(absl::Microseconds(200));
      }
    }
  }

 private:
  absl::Status CheckPeer(int peer, int tag) const {
    if (peer < 0 || peer >= size_ || peer == rank_ || tag < 0 ||
        tag >= kMaxMessageTag) {
      return absl::InvalidArgumentError(absl::StrCat(
          "rank ", rank_, ": a message with rank ", peer, " and tag ", tag,
          " (ranks 0..", size_ - 1, " other than this one, tags below ",
          kMaxMessageTag, ")"));
    }
    return absl::OkStatus();
  }

  // Waits for the announcements' sends (when the group goes away).
  absl::Status WaitAnnouncements(absl::Time deadline) {
    while (true) {
      {
        absl::MutexLock lock(&mu_);
        ASSIGN_OR_RETURN(const bool all_delivered,
                         ReleaseDeliveredAnnouncements());
        if (all_delivered) return absl::OkStatus();
      }
      if (absl::Now() >= deadline) {
        return absl::DeadlineExceededError("announcements not delivered");
      }
      std::this_thread::yield();
    }
  }

  absl::Status Failure() const {
    absl::MutexLock lock(&mu_);
    return failure_;
  }

  // A collective or the sends that did not finish leave the group unusable:
  // the next call fails at once with the same error.
  absl::Status Broken(absl::Status s) {
    absl::MutexLock lock(&mu_);
    return BrokenLocked(std::move(s));
  }
  absl::Status BrokenLocked(absl::Status s)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!s.ok() && failure_.ok()) failure_ = s;
    return s;
  }

  // Whether every announcement sent so far has arrived; if so, their
  // requests and payloads are let go.
  absl::StatusOr<bool> ReleaseDeliveredAnnouncements()
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (announce_sends_.empty()) return true;
    int done = 0;
    SLUICE_MPI_CALL(Mpi().Testall(static_cast<int>(announce_sends_.size()),
                                announce_sends_.data(), &done,
                                MPI_STATUSES_IGNORE),
                    "announcement");
    if (done) {
      announce_sends_.clear();
      announce_blobs_.clear();
    }
    return done != 0;
  }

  MPI_Comm comm_;
  const int rank_;
  const int size_;
  const std::string library_;
  const size_t piece_;  // ProcessGroupOptions::max_message_bytes
  mutable absl::Mutex mu_;
  // Per step channel: the sends not yet waited for, and the abort
  // messages' payloads (stable addresses for Isend).
  std::vector<MPI_Request> sends_[kStepChannels] ABSL_GUARDED_BY(mu_);
  std::deque<uint64_t> abort_payloads_[kStepChannels] ABSL_GUARDED_BY(mu_);
  std::vector<MPI_Request> announce_sends_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> announce_blobs_ ABSL_GUARDED_BY(mu_);
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

bool BuiltWithMpi() { return true; }

absl::StatusOr<std::string> MpiLibraryVersion() {
  RETURN_IF_ERROR(LoadMpi().status());
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  if (Mpi().Get_library_version(version, &length) != MPI_SUCCESS) {
    return std::string("unknown MPI");
  }
  std::vector<std::string> lines =
      absl::StrSplit(std::string(version, length), absl::ByAnyChar("\n,"));
  return lines.empty() ? std::string("unknown MPI") : lines[0];
}

absl::StatusOr<std::unique_ptr<ProcessGroup>> ConnectMpiProcessGroup(
    const ProcessGroupOptions& options) {
  RETURN_IF_ERROR(InitMpiOnce());
  MPI_Comm comm;
  SLUICE_MPI_CALL(Mpi().Comm_dup(Mpi().comm_world, &comm), "MPI_Comm_dup");
  SLUICE_MPI_CALL(Mpi().Comm_set_errhandler(comm, Mpi().errors_return),
                  "MPI_Comm_set_errhandler");
  int rank = 0, size = 1;
  SLUICE_MPI_CALL(Mpi().Comm_rank(comm, &rank), "MPI_Comm_rank");
  SLUICE_MPI_CALL(Mpi().Comm_size(comm, &size), "MPI_Comm_size");
  void* tag_ub = nullptr;
  int has_tag_ub = 0;
  Mpi().Comm_get_attr(Mpi().comm_world, MPI_TAG_UB, &tag_ub, &has_tag_ub);
  if (has_tag_ub && *static_cast<int*>(tag_ub) < kAnnounceTag) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the MPI library's largest tag is ", *static_cast<int*>(tag_ub),
        "; sluice needs ", kAnnounceTag));
  }
  return std::unique_ptr<ProcessGroup>(
      new MpiProcessGroup(comm, rank, size,
                          MpiLibraryVersion().value_or("unknown MPI"),
                          std::clamp<size_t>(options.max_message_bytes, 1,
                                             static_cast<size_t>(INT_MAX))));
}

}  // namespace sluice
