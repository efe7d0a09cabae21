// libsluice_mpi.so: the MPI entry points and handles sluice uses, taken
// from the MPI this file is linked with (mpi_api.h). Nothing else of sluice
// is in it.
#include "distributed/mpi_api.h"

namespace {

sluice::MpiApi MakeApi() {
  sluice::MpiApi api;
  api.Initialized = &MPI_Initialized;
  api.Finalized = &MPI_Finalized;
  api.Init_thread = &MPI_Init_thread;
  api.Query_thread = &MPI_Query_thread;
  api.Finalize = &MPI_Finalize;
  api.Error_string = &MPI_Error_string;
  api.Get_library_version = &MPI_Get_library_version;
  api.Comm_dup = &MPI_Comm_dup;
  api.Comm_free = &MPI_Comm_free;
  api.Comm_set_errhandler = &MPI_Comm_set_errhandler;
  api.Comm_rank = &MPI_Comm_rank;
  api.Comm_size = &MPI_Comm_size;
  api.Comm_get_attr = &MPI_Comm_get_attr;
  api.Iallgather = &MPI_Iallgather;
  api.Iallgatherv = &MPI_Iallgatherv;
  api.Ibcast = &MPI_Ibcast;
  api.Isend = &MPI_Isend;
  api.Irecv = &MPI_Irecv;
  api.Iprobe = &MPI_Iprobe;
  api.Improbe = &MPI_Improbe;
  api.Mrecv = &MPI_Mrecv;
  api.Test = &MPI_Test;
  api.Testall = &MPI_Testall;
  api.Wait = &MPI_Wait;
  api.Cancel = &MPI_Cancel;
  api.Test_cancelled = &MPI_Test_cancelled;
  api.Get_count = &MPI_Get_count;
  api.comm_world = MPI_COMM_WORLD;
  api.byte = MPI_BYTE;
  api.int64 = MPI_INT64_T;
  api.uint64 = MPI_UINT64_T;
  api.errors_return = MPI_ERRORS_RETURN;
  return api;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const sluice::MpiApi*
sluice_mpi_api(int version) {
  static const sluice::MpiApi api = MakeApi();
  return version == sluice::kMpiApiVersion ? &api : nullptr;
}
