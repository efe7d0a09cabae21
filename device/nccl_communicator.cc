// Dispatches to the CUDA implementation (device/cuda/nccl_communicator.cc)
// in a CUDA build; says why there is none otherwise.
#include "device/nccl_communicator.h"

namespace sluice {

#ifdef SLUICE_WITH_CUDA
namespace internal {
std::string CudaNcclDescription();
bool CudaNcclAvailable();
absl::StatusOr<std::string> CudaNcclUniqueId();
absl::StatusOr<std::unique_ptr<NcclCommunicator>> CreateCudaNcclCommunicator(
    const std::string& unique_id, int rank, int world_size, GpuDevice* device,
    absl::Duration timeout);
}  // namespace internal
#endif

namespace {
constexpr char kNoCuda[] = "none: this build of sluice has no CUDA support";
}  // namespace

std::string NcclDescription() {
#ifdef SLUICE_WITH_CUDA
  return internal::CudaNcclDescription();
#else
  return kNoCuda;
#endif
}

bool NcclAvailable() {
#ifdef SLUICE_WITH_CUDA
  return internal::CudaNcclAvailable();
#else
  return false;
#endif
}

absl::StatusOr<std::string> NcclUniqueId() {
#ifdef SLUICE_WITH_CUDA
  return internal::CudaNcclUniqueId();
#else
  return absl::UnavailableError(kNoCuda);
#endif
}

absl::StatusOr<std::unique_ptr<NcclCommunicator>> NcclCommunicator::Create(
    const std::string& unique_id, int rank, int world_size, GpuDevice* device,
    absl::Duration timeout) {
#ifdef SLUICE_WITH_CUDA
  return internal::CreateCudaNcclCommunicator(unique_id, rank, world_size,
                                              device, timeout);
#else
  return absl::UnavailableError(kNoCuda);
#endif
}

}  // namespace sluice
