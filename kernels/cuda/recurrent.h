// Host launcher for the Recurrent op (ONNX RNN, GRU, LSTM) on the GPU: one
// thread block per (direction, batch entry) runs that entry's whole
// sequence, step after step, in double like the CPU kernel
// (kernels/cpu/recurrent.cc); within a step the block's threads share the
// gate rows, then the hidden units.
//
//   RecurrentLaunch l = ...;  // sizes, attributes, device pointers
//   RETURN_IF_ERROR(LaunchRecurrent(l, stream));
//
// Stateless; thread-safe.
#ifndef SLUICE_KERNELS_CUDA_RECURRENT_H_
#define SLUICE_KERNELS_CUDA_RECURRENT_H_

#include <cstdint>

#include "absl/status/status.h"
#include "cuda_runtime_api.h"
#include "kernels/cuda/launch_types.h"
#include "kernels/recurrent_cell.h"

namespace sluice::cuda {

inline constexpr int kMaxRecurrentActivations = 6;  // 3 slots x 2 directions

struct RecurrentLaunch {
  GpuDtype dtype = GpuDtype::kFloat;  // a float type
  RecurrentCell cell = RecurrentCell::kRnn;
  RecurrentSizes z{};
  bool reverse = false;
  bool linear_before_reset = false;
  bool input_forget = false;
  float clip = 0;
  int slots = 1;  // activations per direction
  Activation acts[kMaxRecurrentActivations];
  // Inputs (device memory): x, w, r, b, initial_h, initial_c, p, and the
  // sequence lengths (int32, already checked against the step count).
  const void* x = nullptr;
  const void* w = nullptr;
  const void* r = nullptr;
  const void* bias = nullptr;
  const void* initial_h = nullptr;
  const void* initial_c = nullptr;
  const void* p = nullptr;
  const int32_t* lens = nullptr;
  // Outputs (device memory); y must be zeroed before the launch.
  void* y = nullptr;
  void* y_h = nullptr;
  void* y_c = nullptr;
  // RecurrentScratchDoubles(z) doubles of device memory.
  double* scratch = nullptr;
};

// Doubles of scratch a launch needs: per block, the gate pre-activations of
// x and of H (2*G*H), the state H and C and two more of H (GRU's z and r).
int64_t RecurrentScratchDoubles(const RecurrentSizes& z);

absl::Status LaunchRecurrent(const RecurrentLaunch& l, cudaStream_t stream);

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_RECURRENT_H_
