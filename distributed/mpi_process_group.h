// The process group of a job started by mpirun (Open MPI, or any MPI that
// sluice was built with): its control collectives and the host tensors that
// cross processes go by MPI, on a communicator of its own (a duplicate of
// MPI_COMM_WORLD, so two sessions of one process never see each other's
// messages). MPI is initialised once per process, with
// MPI_THREAD_MULTIPLE, on the first call, and finalised at exit; errors
// come back as Status values (MPI_ERRORS_RETURN), never as an abort.
//
//   if (BuiltWithMpi()) {
//     ASSIGN_OR_RETURN(std::unique_ptr<ProcessGroup> g,
//                      ConnectMpiProcessGroup(options));
//   }
//
// Thread safety: as ProcessGroup (one thread at a time per group).
#ifndef SLUICE_DISTRIBUTED_MPI_PROCESS_GROUP_H_
#define SLUICE_DISTRIBUTED_MPI_PROCESS_GROUP_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "distributed/process_group.h"

namespace sluice {

// Whether this build of sluice has MPI (CMake found it).
bool BuiltWithMpi();

// "Open MPI v4.1.4" (MPI_Get_library_version's first line). Errors: why
// there is none (UNIMPLEMENTED in a build without MPI; the loader's reason
// when the shim or its libmpi does not load here: mpi_library.h).
absl::StatusOr<std::string> MpiLibraryVersion();

// Joins every process of MPI_COMM_WORLD (a collective: every rank calls
// it, in the same order as its other MPI group creations). Errors:
// UNIMPLEMENTED in a build without MPI; INTERNAL with MPI's message when
// initialisation fails or the library lacks MPI_THREAD_MULTIPLE or tags up
// to kMaxMessageTag.
absl::StatusOr<std::unique_ptr<ProcessGroup>> ConnectMpiProcessGroup(
    const ProcessGroupOptions& options);

}  // namespace sluice

#endif  // SLUICE_DISTRIBUTED_MPI_PROCESS_GROUP_H_
