// ConnectProcessGroup: MPI under mpirun, else the bootstrap.
#include "distributed/process_group.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "distributed/bootstrap.h"
#include "distributed/mpi_process_group.h"

namespace sluice {
namespace {

absl::Status NoMessages(absl::string_view transport) {
  return absl::UnimplementedError(absl::StrCat(
      "host tensors cannot cross processes over ", transport,
      " (it carries control messages only): start the job with mpirun "
      "(sluice built with MPI), or place it so that only GPU tensors cross "
      "processes (NCCL)"));
}

// The processes of sluice's environment-variable launcher: control
// messages over the bootstrap's connections, no host tensors.
class BootstrapProcessGroup final : public ProcessGroup {
 public:
  BootstrapProcessGroup(std::unique_ptr<ProcessGroupBootstrap> bootstrap,
                        std::string address)
      : bootstrap_(std::move(bootstrap)), address_(std::move(address)) {}

  int rank() const override { return bootstrap_->rank(); }
  int world_size() const override { return bootstrap_->world_size(); }
  std::string Describe() const override {
    return absl::StrCat("sluice bootstrap at ", address_, ", ", world_size(),
                        " ranks");
  }
  absl::StatusOr<std::vector<std::string>> AllGather(
      absl::string_view blob, absl::Duration timeout) override {
    return bootstrap_->AllGather(blob, timeout);
  }
  absl::StatusOr<std::string> Broadcast(absl::string_view blob,
                                        absl::Duration timeout) override {
    return bootstrap_->Broadcast(blob, timeout);
  }
  bool HasMessages() const override { return false; }
  absl::Status Send(int, int, const void*, size_t) override {
    return NoMessages("sluice's bootstrap");
  }
  absl::StatusOr<size_t> Recv(int, int, void*, size_t, absl::Time) override {
    return NoMessages("sluice's bootstrap");
  }
  absl::Status WaitSends(uint64_t, absl::Time) override {
    return absl::OkStatus();
  }
  // Without messages a failed rank has nothing to interrupt: its peers
  // wait in NCCL, which the session aborts, or in the status exchange.
  absl::Status SendAbort(uint64_t) override { return absl::OkStatus(); }
  absl::Status DiscardAbort(int, uint64_t, absl::Time) override {
    return absl::OkStatus();
  }

 private:
  std::unique_ptr<ProcessGroupBootstrap> bootstrap_;
  const std::string address_;
};

// A world of one.
class SingleProcessGroup final : public ProcessGroup {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  std::string Describe() const override { return "one process"; }
  absl::StatusOr<std::vector<std::string>> AllGather(
      absl::string_view blob, absl::Duration) override {
    return std::vector<std::string>{std::string(blob)};
  }
  absl::StatusOr<std::string> Broadcast(absl::string_view blob,
                                        absl::Duration) override {
    return std::string(blob);
  }
  bool HasMessages() const override { return false; }
  absl::Status Send(int dst, int, const void*, size_t) override {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", dst, " in a job of one process"));
  }
  absl::StatusOr<size_t> Recv(int src, int, void*, size_t,
                              absl::Time) override {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", src, " in a job of one process"));
  }
  absl::Status WaitSends(uint64_t, absl::Time) override {
    return absl::OkStatus();
  }
  absl::Status SendAbort(uint64_t) override { return absl::OkStatus(); }
  absl::Status DiscardAbort(int, uint64_t, absl::Time) override {
    return absl::OkStatus();
  }
};

}  // namespace

absl::Status ProcessGroup::Announce(absl::string_view blob,
                                    absl::Duration timeout) {
  return Broadcast(blob, timeout).status();
}

absl::StatusOr<std::string> ProcessGroup::NextAnnouncement() {
  return Broadcast("", absl::InfiniteDuration());
}

absl::StatusOr<std::unique_ptr<ProcessGroup>> ConnectProcessGroup(
    const ProcessGroupInfo& info, std::vector<FingerprintPart> fingerprint,
    const ProcessGroupOptions& options) {
  if (info.world_size <= 1) {
    return std::unique_ptr<ProcessGroup>(new SingleProcessGroup());
  }
  const bool under_mpi =
      info.launcher == Launcher::kOpenMpi || info.launcher == Launcher::kPmix;
  if (under_mpi && !info.coordinator.has_value()) {
    ASSIGN_OR_RETURN(std::unique_ptr<ProcessGroup> group,
                     ConnectMpiProcessGroup(options));
    if (group->rank() != info.rank || group->world_size() != info.world_size) {
      return absl::FailedPreconditionError(absl::StrCat(
          "MPI says rank ", group->rank(), " of ", group->world_size(),
          " but the launcher's variables say rank ", info.rank, " of ",
          info.world_size));
    }
    return group;
  }
  ASSIGN_OR_RETURN(BootstrapOptions bootstrap,
                   BootstrapOptionsFor(info, std::move(fingerprint)));
  bootstrap.join_timeout = options.join_timeout;
  bootstrap.collective_timeout = options.collective_timeout;
  const std::string address = bootstrap.coordinator.ToString();
  ASSIGN_OR_RETURN(std::unique_ptr<ProcessGroupBootstrap> joined,
                   JoinProcessGroup(bootstrap));
  return std::unique_ptr<ProcessGroup>(
      new BootstrapProcessGroup(std::move(joined), address));
}

}  // namespace sluice
