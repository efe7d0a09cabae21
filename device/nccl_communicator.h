// NcclCommunicator: one GPU of each process of a job joined in an NCCL
// communicator, for point-to-point transfers on the GPU's compute stream
// (executor/cross_process.h's GPU route). NCCL is opened at run time
// (libnccl.so.2, as cuDNN is: device/dynamic_library.h), so sluice starts
// without it; NcclDescription says which one was found.
//
//   std::string id = rank == 0 ? *NcclUniqueId() : "";
//   id = group->Broadcast(id)...;          // the same id on every rank
//   ASSIGN_OR_RETURN(auto comm, NcclCommunicator::Create(id, rank, n, gpu));
//   RETURN_IF_ERROR(comm->Send(ptr, bytes, /*peer=*/1));   // enqueued
//
// This header is CUDA-free. Thread safety: one thread at a time (NCCL's
// operations on one communicator must be issued in one order).
#ifndef SLUICE_DEVICE_NCCL_COMMUNICATOR_H_
#define SLUICE_DEVICE_NCCL_COMMUNICATOR_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "device/gpu_device.h"

namespace sluice {

// "NCCL 2.28.3 (libnccl.so.2)", or "not found (...)" with the loader's
// reason, or "none: this build of sluice has no CUDA support".
std::string NcclDescription();
// Whether NCCL loads in this process.
bool NcclAvailable();
// A fresh ncclUniqueId (rank 0 makes it; every rank passes it to Create),
// as bytes. UNAVAILABLE without NCCL.
absl::StatusOr<std::string> NcclUniqueId();

class NcclCommunicator {
 public:
  virtual ~NcclCommunicator() = default;
  // Joins rank `rank` of `world_size` with `device` (collective: every rank
  // calls it with the same id). `timeout` bounds every later wait on the
  // host. Errors: NCCL's, naming the call; UNAVAILABLE without NCCL.
  static absl::StatusOr<std::unique_ptr<NcclCommunicator>> Create(
      const std::string& unique_id, int rank, int world_size,
      GpuDevice* device, absl::Duration timeout);

  virtual GpuDevice* device() const = 0;
  // Enqueues sending `bytes` at `data` (this device's memory) to `peer` on
  // the device's compute stream.
  virtual absl::Status Send(const void* data, size_t bytes, int peer) = 0;
  // Enqueues receiving `bytes` from `peer` into `data`.
  virtual absl::Status Recv(void* data, size_t bytes, int peer) = 0;
  // Sends `bytes` of host memory (a small header) to `peer`: copied to the
  // device first (the host buffer may be reused when it returns).
  virtual absl::Status SendHost(const void* data, size_t bytes,
                                int peer) = 0;
  // Receives `bytes` (at most 4 KiB) from `peer` into host memory, waiting
  // for them: DEADLINE_EXCEEDED naming the peer after the timeout, or
  // NCCL's asynchronous error (a peer that died).
  virtual absl::Status RecvHost(void* data, size_t bytes, int peer) = 0;
  // ncclCommAbort: operations in flight end; the communicator is unusable.
  virtual void Abort() = 0;
};

}  // namespace sluice

#endif  // SLUICE_DEVICE_NCCL_COMMUNICATOR_H_
