// Host launcher for LinearAttention on the GPU: one thread block per
// (batch entry, kv head) carries its [Dk, Dv] float state through the
// sequence, step after step, as the CPU kernel does
// (kernels/cpu/linear_attention.cc); within a step the block's threads
// share the state's elements, then the outputs.
//
//   LinearAttentionLaunch l = ...;  // sizes, flags, device pointers
//   RETURN_IF_ERROR(LaunchLinearAttention(l, stream));
//
// Stateless; thread-safe.
#ifndef SLUICE_KERNELS_CUDA_LINEAR_ATTENTION_H_
#define SLUICE_KERNELS_CUDA_LINEAR_ATTENTION_H_

#include <cstdint>

#include "absl/status/status.h"
#include "cuda_runtime_api.h"
#include "kernels/cuda/launch_types.h"

namespace sluice::cuda {

struct LinearAttentionLaunch {
  GpuDtype dtype = GpuDtype::kFloat;  // a float type
  int64_t b = 0, t = 0, hq = 0, hkv = 0, dk = 0, dv = 0;
  int64_t decay_width = 0;  // gated: 1 or dk
  int64_t beta_width = 0;   // delta: 1 or hkv
  bool gated = false, delta = false;
  float scale = 1;
  // Device memory: query, key, value, past_state, decay, beta (decay and
  // beta read only when gated / delta); out and present_state.
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const void* past = nullptr;
  const void* decay = nullptr;
  const void* beta = nullptr;
  void* out = nullptr;
  void* state = nullptr;
  // LinearAttentionScratchFloats(l) floats of device memory.
  float* scratch = nullptr;
};

// Floats of scratch a launch needs: per block, the state and one value row.
int64_t LinearAttentionScratchFloats(const LinearAttentionLaunch& l);

absl::Status LaunchLinearAttention(const LinearAttentionLaunch& l,
                                   cudaStream_t stream);

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_LINEAR_ATTENTION_H_
