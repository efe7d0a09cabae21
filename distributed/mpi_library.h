// Loading MPI at run time: the shim libsluice_mpi.so (mpi_api.h), which
// links the MPI sluice was built with, is opened on first use, so nothing
// but the shim depends on libmpi (decision 52).
//
//   ASSIGN_OR_RETURN(const MpiApi* mpi, LoadMpi());
//   mpi->Comm_rank(mpi->comm_world, &rank);
//
// Where the shim is looked for (MpiShimCandidates): beside the file that
// holds sluice's code (the `sluice` command, libsluice.so, the Python
// extension, a test binary), then in ../lib (and ../lib64 where the
// install's library folder is lib64) from there (bin/ and lib/ of an
// install, tools/ and lib/ of a build folder), then where the dynamic
// loader looks. The first of those that exists is opened: a shim that is
// there but does not load (its libmpi missing) is the error reported. It is opened RTLD_GLOBAL: Open MPI's plugins, which Open
// MPI opens itself, take their symbols from the libmpi already loaded.
//
// Thread safety: LoadMpi may be called from any thread; the table it
// returns is immutable.
#ifndef SLUICE_DISTRIBUTED_MPI_LIBRARY_H_
#define SLUICE_DISTRIBUTED_MPI_LIBRARY_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "distributed/mpi_api.h"

namespace sluice {

// The shim's file name.
inline constexpr char kMpiShimName[] = "libsluice_mpi.so";

// The paths and names LoadMpi tries, in order.
std::vector<std::string> MpiShimCandidates();

// The MPI table, loaded once per process (a failure is remembered too).
// NOT_FOUND naming the places looked in when there is no shim, or the
// shim's path and the loader's reason when it does not load ("libmpi.so.40:
// cannot open shared object file"); FAILED_PRECONDITION for a shim of
// another sluice build.
const absl::StatusOr<const MpiApi*>& LoadMpi();

// LoadMpi from `candidates`, not cached: for tests.
absl::StatusOr<const MpiApi*> LoadMpiFrom(const std::vector<std::string>& candidates);

}  // namespace sluice

#endif  // SLUICE_DISTRIBUTED_MPI_LIBRARY_H_
