// Host launchers for the signal ops on the GPU: the hann, hamming and
// blackman windows (computed in double, as the CPU kernel does).
//
//   RETURN_IF_ERROR(LaunchWindow(GpuDtype::kFloat, WindowKind::kHann, y,
//                                size, /*periodic=*/true, s));
//
// Stateless; thread-safe.
#ifndef SLUICE_KERNELS_CUDA_SIGNAL_H_
#define SLUICE_KERNELS_CUDA_SIGNAL_H_

#include <cstdint>

#include "absl/status/status.h"
#include "cuda_runtime_api.h"
#include "kernels/cuda/launch_types.h"

namespace sluice::cuda {

enum class WindowKind { kHann, kHamming, kBlackman };

// y[i] for i < size, with a = pi i / (periodic ? size : size - 1):
// sin^2 a (hann), 25/46 - 21/46 cos 2a (hamming), 0.42 - 0.5 cos 2a +
// 0.08 cos 4a (blackman). Float dtypes only: the device's sin and cos may
// differ from the host's in the last bit of a double, which truncation to
// an integer dtype could turn into a whole unit.
bool HasWindowKernel(GpuDtype dtype);
absl::Status LaunchWindow(GpuDtype dtype, WindowKind kind, void* y,
                          int64_t size, bool periodic, cudaStream_t stream);

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_SIGNAL_H_
