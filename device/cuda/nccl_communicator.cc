// NCCL loaded at run time (libnccl.so.2); the communicator's operations on
// the GPU's compute stream.
#include <cstring>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/status_macros.h"
#include "cuda_runtime_api.h"
#include "device/cuda/cuda_status.h"
#include "device/dynamic_library.h"
#include "device/nccl_communicator.h"
#include "nccl.h"

namespace sluice {
namespace internal {
namespace {

constexpr size_t kMaxHostBytes = 4096;

struct NcclApi {
  std::string library;
  int version = 0;
  decltype(&::ncclGetVersion) GetVersion = nullptr;
  decltype(&::ncclGetUniqueId) GetUniqueId = nullptr;
  decltype(&::ncclCommInitRank) CommInitRank = nullptr;
  decltype(&::ncclCommDestroy) CommDestroy = nullptr;
  decltype(&::ncclCommAbort) CommAbort = nullptr;
  decltype(&::ncclCommGetAsyncError) CommGetAsyncError = nullptr;
  decltype(&::ncclGetErrorString) GetErrorString = nullptr;
  decltype(&::ncclSend) Send = nullptr;
  decltype(&::ncclRecv) Recv = nullptr;

  absl::Status Check(ncclResult_t r, absl::string_view what) const {
    if (r == ncclSuccess) return absl::OkStatus();
    return absl::InternalError(absl::StrCat(
        what, ": ", GetErrorString != nullptr ? GetErrorString(r) : "error",
        " (NCCL ", static_cast<int>(r), ")"));
  }
};

struct Loaded {
  std::unique_ptr<NcclApi> api;
  std::string error;
};

const Loaded& GetNccl() {
  static const Loaded* loaded = [] {
    auto* out = new Loaded;
    absl::StatusOr<DynamicLibrary> lib =
        DynamicLibrary::Open({"libnccl.so.2", "libnccl.so"});
    if (!lib.ok()) {
      out->error = std::string(lib.status().message());
      return out;
    }
    auto api = std::make_unique<NcclApi>();
    api->library = lib->path();
    lib->Bind("ncclGetVersion", &api->GetVersion)
        .Bind("ncclGetUniqueId", &api->GetUniqueId)
        .Bind("ncclCommInitRank", &api->CommInitRank)
        .Bind("ncclCommDestroy", &api->CommDestroy)
        .Bind("ncclCommAbort", &api->CommAbort)
        .Bind("ncclCommGetAsyncError", &api->CommGetAsyncError)
        .Bind("ncclGetErrorString", &api->GetErrorString)
        .Bind("ncclSend", &api->Send)
        .Bind("ncclRecv", &api->Recv);
    if (absl::Status s = lib->CheckAllBound(); !s.ok()) {
      out->error = std::string(s.message());
      return out;
    }
    api->GetVersion(&api->version);
    lib->KeepOpen();
    out->api = std::move(api);
    return out;
  }();
  return *loaded;
}

class CudaNcclCommunicator final : public NcclCommunicator {
 public:
  CudaNcclCommunicator(const NcclApi* api, ncclComm_t comm, GpuDevice* device,
                       absl::Duration timeout, void* device_scratch,
                       void* host_scratch)
      : api_(api), comm_(comm), device_(device), timeout_(timeout),
        device_scratch_(device_scratch), host_scratch_(host_scratch) {}
  ~CudaNcclCommunicator() override {
    ScopedCudaDevice on(device_->physical_index());
    if (!aborted_) {
      cudaStreamSynchronize(Stream());
      api_->CommDestroy(comm_);
    }
    cudaFree(device_scratch_);
    cudaFreeHost(host_scratch_);
  }

  GpuDevice* device() const override { return device_; }

  absl::Status Send(const void* data, size_t bytes, int peer) override {
    RETURN_IF_ERROR(Usable());
    ScopedCudaDevice on(device_->physical_index());
    return api_->Check(
        api_->Send(data, bytes, ncclUint8, peer, comm_, Stream()),
        absl::StrCat("ncclSend of ", bytes, " bytes to rank ", peer));
  }

  absl::Status Recv(void* data, size_t bytes, int peer) override {
    RETURN_IF_ERROR(Usable());
    ScopedCudaDevice on(device_->physical_index());
    return api_->Check(
        api_->Recv(data, bytes, ncclUint8, peer, comm_, Stream()),
        absl::StrCat("ncclRecv of ", bytes, " bytes from rank ", peer));
  }

  absl::Status SendHost(const void* data, size_t bytes, int peer) override {
    RETURN_IF_ERROR(Usable());
    if (bytes > kMaxHostBytes) {
      return absl::InvalidArgumentError("a host message above 4 KiB");
    }
    ScopedCudaDevice on(device_->physical_index());
    // From pageable memory: the call returns once `data` has been read.
    RETURN_IF_CUDA_ERROR(cudaMemcpyAsync(device_scratch_, data, bytes,
                                         cudaMemcpyHostToDevice, Stream()),
                         "copying a header to the GPU");
    return Send(device_scratch_, bytes, peer);
  }

  absl::Status RecvHost(void* data, size_t bytes, int peer) override {
    RETURN_IF_ERROR(Usable());
    if (bytes > kMaxHostBytes) {
      return absl::InvalidArgumentError("a host message above 4 KiB");
    }
    RETURN_IF_ERROR(Recv(device_scratch_, bytes, peer));
    ScopedCudaDevice on(device_->physical_index());
    RETURN_IF_CUDA_ERROR(cudaMemcpyAsync(host_scratch_, device_scratch_, bytes,
                                         cudaMemcpyDeviceToHost, Stream()),
                         "copying a header from the GPU");
    // Wait for the stream, watching NCCL's asynchronous errors and the
    // deadline instead of blocking in cudaStreamSynchronize.
    const absl::Time deadline = absl::Now() + timeout_;
    while (true) {
      cudaError_t e = cudaStreamQuery(Stream());
      if (e == cudaSuccess) break;
      if (e != cudaErrorNotReady) {
        return CudaStatus(e, absl::StrCat("receiving from rank ", peer));
      }
      ncclResult_t async = ncclSuccess;
      api_->CommGetAsyncError(comm_, &async);
      if (async != ncclSuccess && async != ncclInProgress) {
        Abort();
        return api_->Check(async, absl::StrCat("NCCL while receiving from "
                                               "rank ", peer));
      }
      if (absl::Now() >= deadline) {
        Abort();
        return absl::DeadlineExceededError(absl::StrCat(
            "nothing from rank ", peer, " over NCCL within ",
            absl::FormatDuration(timeout_), "; is it alive?"));
      }
      absl::SleepFor(absl::Microseconds(20));
    }
    std::memcpy(data, host_scratch_, bytes);
    return absl::OkStatus();
  }

  void Abort() override {
    if (aborted_) return;
    aborted_ = true;
    api_->CommAbort(comm_);
  }

 private:
  cudaStream_t Stream() const {
    return static_cast<cudaStream_t>(device_->compute_stream());
  }
  absl::Status Usable() const {
    if (aborted_) {
      return absl::FailedPreconditionError(
          "the NCCL communicator was aborted after a failure");
    }
    return absl::OkStatus();
  }

  const NcclApi* const api_;
  ncclComm_t comm_;
  GpuDevice* const device_;
  const absl::Duration timeout_;
  void* const device_scratch_;
  void* const host_scratch_;
  bool aborted_ = false;
};

}  // namespace

std::string CudaNcclDescription() {
  const Loaded& nccl = GetNccl();
  if (nccl.api == nullptr) return absl::StrCat("not found (", nccl.error, ")");
  const int v = nccl.api->version;
  return absl::StrCat("NCCL ", v / 10000, ".", (v / 100) % 100, ".", v % 100,
                      " (", nccl.api->library, ")");
}

bool CudaNcclAvailable() { return GetNccl().api != nullptr; }

absl::StatusOr<std::string> CudaNcclUniqueId() {
  const Loaded& nccl = GetNccl();
  if (nccl.api == nullptr) {
    return absl::UnavailableError(absl::StrCat("NCCL: ", nccl.error));
  }
  ncclUniqueId id;
  RETURN_IF_ERROR(nccl.api->Check(nccl.api->GetUniqueId(&id),
                                  "ncclGetUniqueId"));
  return std::string(id.internal, sizeof(id.internal));
}

absl::StatusOr<std::unique_ptr<NcclCommunicator>> CreateCudaNcclCommunicator(
    const std::string& unique_id, int rank, int world_size, GpuDevice* device,
    absl::Duration timeout) {
  const Loaded& nccl = GetNccl();
  if (nccl.api == nullptr) {
    return absl::UnavailableError(absl::StrCat("NCCL: ", nccl.error));
  }
  ncclUniqueId id;
  if (unique_id.size() != sizeof(id.internal)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "an NCCL unique id of ", unique_id.size(), " bytes (want ",
        sizeof(id.internal), ")"));
  }
  std::memcpy(id.internal, unique_id.data(), sizeof(id.internal));
  ScopedCudaDevice on(device->physical_index());
  void* device_scratch = nullptr;
  void* host_scratch = nullptr;
  RETURN_IF_CUDA_ERROR(cudaMalloc(&device_scratch, kMaxHostBytes),
                       "NCCL header buffer");
  absl::Status s = CudaStatus(cudaMallocHost(&host_scratch, kMaxHostBytes),
                              "NCCL header buffer");
  ncclComm_t comm = nullptr;
  if (s.ok()) {
    s = nccl.api->Check(
        nccl.api->CommInitRank(&comm, world_size, id, rank),
        absl::StrCat("ncclCommInitRank (rank ", rank, " of ", world_size,
                     ")"));
  }
  if (!s.ok()) {
    cudaFree(device_scratch);
    if (host_scratch != nullptr) cudaFreeHost(host_scratch);
    return s;
  }
  return std::unique_ptr<NcclCommunicator>(new CudaNcclCommunicator(
      nccl.api.get(), comm, device, timeout, device_scratch, host_scratch));
}

}  // namespace internal
}  // namespace sluice
