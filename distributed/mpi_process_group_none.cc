// A build without MPI (CMake found none): jobs of several processes use
// sluice's bootstrap (process_group.h) and carry no host tensors.
#include "distributed/mpi_process_group.h"

namespace sluice {

bool BuiltWithMpi() { return false; }

absl::StatusOr<std::string> MpiLibraryVersion() {
  return absl::UnimplementedError(
      "sluice was built without MPI (install libopenmpi-dev, scripts/setup.sh "
      "does, and build again)");
}

absl::StatusOr<std::unique_ptr<ProcessGroup>> ConnectMpiProcessGroup(
    const ProcessGroupOptions&) {
  return absl::UnimplementedError(
      "this sluice was built without MPI, so a job started by mpirun cannot "
      "use it; build with libopenmpi-dev installed (scripts/setup.sh), or "
      "start the processes with SLUICE_RANK, SLUICE_WORLD_SIZE, "
      "SLUICE_COORDINATOR and SLUICE_JOB_TOKEN");
}

}  // namespace sluice
