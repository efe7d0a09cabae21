// ProcessGroupInfo: who this process is in a job of several processes (its
// rank, the world size, its rank on its host, and where the coordinator
// listens), read from the launcher's environment: Open MPI (`mpirun`),
// PMIx, Slurm (`srun`), or sluice's own SLUICE_RANK / SLUICE_WORLD_SIZE /
// SLUICE_COORDINATOR / SLUICE_JOB_TOKEN. A process started by none of them
// is rank 0 of 1, as sluice ran before.
//
//   ASSIGN_OR_RETURN(ProcessGroupInfo me, DetectProcessGroup());
//   if (me.world_size > 1) {
//     ... JoinProcessGroup(BootstrapOptionsFor(me, fingerprint)) ...
//   }
//
// Stateless functions; thread-safe (DetectProcessGroup() reads the process
// environment, which must not be modified concurrently).
#ifndef SLUICE_DISTRIBUTED_PROCESS_GROUP_INFO_H_
#define SLUICE_DISTRIBUTED_PROCESS_GROUP_INFO_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sluice {

// The environment as a function (the same type as executor/runtime_config.h's
// EnvLookup, so tests pass a map).
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;

// sluice's own launcher variables (what torchrun users know as RANK,
// WORLD_SIZE, MASTER_ADDR:MASTER_PORT).
inline constexpr char kEnvRank[] = "SLUICE_RANK";
inline constexpr char kEnvWorldSize[] = "SLUICE_WORLD_SIZE";
inline constexpr char kEnvLocalRank[] = "SLUICE_LOCAL_RANK";
inline constexpr char kEnvCoordinator[] = "SLUICE_COORDINATOR";
inline constexpr char kEnvJobToken[] = "SLUICE_JOB_TOKEN";

// Largest world size accepted (a bound on what a malformed variable or
// message can make sluice allocate).
inline constexpr int kMaxWorldSize = 65536;
// A job token is 16 to 1024 characters.
inline constexpr size_t kMinJobTokenLength = 16;
inline constexpr size_t kMaxJobTokenLength = 1024;

// Which launcher's variables gave the rank and world size.
enum class Launcher {
  kNone,     // no launcher: one process
  kSluice,   // SLUICE_RANK / SLUICE_WORLD_SIZE
  kOpenMpi,  // OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK
  kPmix,     // PMIX_RANK (world size from another launcher's variables)
  kSlurm,    // SLURM_PROCID / SLURM_NTASKS / SLURM_LOCALID
};
const char* LauncherName(Launcher launcher);

// A host and a TCP port, as in SLUICE_COORDINATOR=host:port.
struct HostPort {
  std::string host;  // a name, an IPv4 address, or an IPv6 address without []
  int port = 0;      // 1..65535 (0 only where a caller asks for any free port)
  std::string ToString() const;  // "host:port", "[::1]:port"
};

// Parses "host:port", "[v6addr]:port", ":port" or "port". A port alone
// means the loopback address 127.0.0.1: nothing listens on every interface
// unless the user names such an address (0.0.0.0, ::). INVALID_ARGUMENT,
// naming `what` (such as "SLUICE_COORDINATOR"), for an empty host, a port
// that is not a number in 1..65535, or a string with spaces or controls.
absl::StatusOr<HostPort> ParseHostPort(absl::string_view text,
                                       absl::string_view what);

struct ProcessGroupInfo {
  int rank = 0;
  int world_size = 1;
  // This process's rank among those on its host; unset when the launcher
  // does not say (SLUICE_LOCAL_RANK gives it for sluice's own launcher).
  std::optional<int> local_rank;
  // Where rank 0's coordinator listens (SLUICE_COORDINATOR). Required for
  // more than one process under sluice's own launcher; optional under MPI
  // and Slurm (MPI will carry the bootstrap there).
  std::optional<HostPort> coordinator;
  // SLUICE_JOB_TOKEN; required with a coordinator and more than one process.
  // Under MPI, rank 0 may generate one (GenerateJobToken) and share it.
  std::string job_token;
  Launcher launcher = Launcher::kNone;
  // What was read and decided, one line each ("rank 1 of 4 from
  // OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE", "Slurm's variables ignored
  // under Open MPI"), for logs and `sluice devices`.
  std::vector<std::string> notes;
};

// Reads the launcher variables through `getenv`. Rules:
//  1. Every variable that is set must be a whole number in range
//     (INVALID_ARGUMENT naming it and its value otherwise); a rank without
//     its world size (or the reverse) is INVALID_ARGUMENT.
//  2. Every launcher that is present must agree on rank and world size;
//     INVALID_ARGUMENT lists each one's values when they do not. Slurm's
//     variables are ignored when Open MPI's or PMIx's are set (mpirun inside
//     an allocation sees the allocation's SLURM_PROCID, not its rank).
//  3. rank < world size <= kMaxWorldSize.
//  4. Under sluice's own launcher with world size > 1, SLUICE_COORDINATOR
//     and SLUICE_JOB_TOKEN (kMinJobTokenLength.. kMaxJobTokenLength
//     printable characters) are required; where set, they are checked
//     under every launcher.
absl::StatusOr<ProcessGroupInfo> DetectProcessGroup(const EnvLookup& getenv);
// The same on the process environment.
absl::StatusOr<ProcessGroupInfo> DetectProcessGroup();

// A fresh random job token (64 hex digits from the kernel's random source),
// for rank 0 to share with the others through MPI. UNAVAILABLE if the
// random source fails.
absl::StatusOr<std::string> GenerateJobToken();

// True when `a` and `b` are equal, in time that depends on their lengths
// only, not on where they differ (for comparing job tokens).
bool ConstantTimeEquals(absl::string_view a, absl::string_view b);

}  // namespace sluice

#endif  // SLUICE_DISTRIBUTED_PROCESS_GROUP_INFO_H_
