// Host launcher for the CUDA Cast: every dtype GpuDtype has to every other,
// computing what the CPU Cast (kernels/cpu/cast.cc) computes, bit for bit:
// float to integer truncates toward zero, saturates at the integer's range
// and maps NaN to 0 (to int4/uint4/int2/uint2 it wraps instead); to the
// float8 / float4 types it rounds to nearest even with ONNX's `saturate`,
// and to E8M0 by `round`. The small-float conversions are those of
// core/small_float_codec.h, which run on the device too.
//
//   RETURN_IF_ERROR(LaunchCast(GpuDtype::kFloat, GpuDtype::kFloat8E4M3FN, x,
//                              y, n, {.saturate = false}, stream));
//
// Stateless; thread-safe.
#ifndef SLUICE_KERNELS_CUDA_CAST_H_
#define SLUICE_KERNELS_CUDA_CAST_H_

#include <cstdint>

#include "absl/status/status.h"
#include "core/small_float_codec.h"
#include "cuda_runtime_api.h"
#include "kernels/cuda/launch_types.h"

namespace sluice::cuda {

// ONNX Cast's attributes that change the result (kernels/cast_params.h).
struct CastParams {
  bool saturate = true;
  E8M0Rounding round = E8M0Rounding::kUp;
};

// Converts n elements of x (dtype src) into y (dtype dst), enqueued on
// `stream`. UNIMPLEMENTED for a dtype GpuDtype does not name.
absl::Status LaunchCast(GpuDtype src, GpuDtype dst, const void* x, void* y,
                        int64_t n, CastParams params, cudaStream_t stream);

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_CAST_H_
