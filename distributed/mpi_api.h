// MpiApi: the MPI entry points and handles sluice uses, as one table that
// the MPI shim (mpi_shim.cc, built as libsluice_mpi.so, the only file of
// sluice that links libmpi) fills in. libsluice, the `sluice` command and
// the Python extension do not link MPI: they open the shim at run time
// (mpi_library.h) when a job is started by mpirun, so a machine without
// MPI runs them, and a wheel needs no MPI inside it (decision 52).
//
// Both sides compile this header against the same <mpi.h> (the one CMake
// found), so the types are MPI's own; the handles that an MPI defines as
// addresses of its globals (Open MPI's MPI_COMM_WORLD, MPI_BYTE, ...) are
// read by the shim, which links them. Constants that are plain numbers in
// every MPI (MPI_SUCCESS, MPI_ANY_SOURCE, MPI_STATUS_IGNORE, MPI_TAG_UB,
// the thread levels) stay as <mpi.h> defines them.
//
// No Abseil here: the shim is built from this header and <mpi.h> alone.
#ifndef SLUICE_DISTRIBUTED_MPI_API_H_
#define SLUICE_DISTRIBUTED_MPI_API_H_

#include <mpi.h>

#include <cstddef>

namespace sluice {

// Raised when the table changes; the loader refuses a shim of another
// version (a libsluice_mpi.so left from another build).
inline constexpr int kMpiApiVersion = 1;

struct MpiApi {
  int version = kMpiApiVersion;
  size_t size = sizeof(MpiApi);

  decltype(&::MPI_Initialized) Initialized = nullptr;
  decltype(&::MPI_Finalized) Finalized = nullptr;
  decltype(&::MPI_Init_thread) Init_thread = nullptr;
  decltype(&::MPI_Query_thread) Query_thread = nullptr;
  decltype(&::MPI_Finalize) Finalize = nullptr;
  decltype(&::MPI_Error_string) Error_string = nullptr;
  decltype(&::MPI_Get_library_version) Get_library_version = nullptr;
  decltype(&::MPI_Comm_dup) Comm_dup = nullptr;
  decltype(&::MPI_Comm_free) Comm_free = nullptr;
  decltype(&::MPI_Comm_set_errhandler) Comm_set_errhandler = nullptr;
  decltype(&::MPI_Comm_rank) Comm_rank = nullptr;
  decltype(&::MPI_Comm_size) Comm_size = nullptr;
  decltype(&::MPI_Comm_get_attr) Comm_get_attr = nullptr;
  decltype(&::MPI_Iallgather) Iallgather = nullptr;
  decltype(&::MPI_Iallgatherv) Iallgatherv = nullptr;
  decltype(&::MPI_Ibcast) Ibcast = nullptr;
  decltype(&::MPI_Isend) Isend = nullptr;
  decltype(&::MPI_Irecv) Irecv = nullptr;
  decltype(&::MPI_Iprobe) Iprobe = nullptr;
  decltype(&::MPI_Improbe) Improbe = nullptr;
  decltype(&::MPI_Mrecv) Mrecv = nullptr;
  decltype(&::MPI_Test) Test = nullptr;
  decltype(&::MPI_Testall) Testall = nullptr;
  decltype(&::MPI_Wait) Wait = nullptr;
  decltype(&::MPI_Cancel) Cancel = nullptr;
  decltype(&::MPI_Test_cancelled) Test_cancelled = nullptr;
  decltype(&::MPI_Get_count) Get_count = nullptr;

  MPI_Comm comm_world{};
  MPI_Datatype byte{};
  MPI_Datatype int64{};
  MPI_Datatype uint64{};
  MPI_Errhandler errors_return{};
};

}  // namespace sluice

// The shim's one export: its table, or null when `version` is not the
// shim's kMpiApiVersion.
extern "C" const sluice::MpiApi* sluice_mpi_api(int version);

#endif  // SLUICE_DISTRIBUTED_MPI_API_H_
