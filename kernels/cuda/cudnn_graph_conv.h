// A forward convolution through cuDNN's graph (backend) API. The legacy
// calls (cudnnConvolutionForward and cudnnFind*) reach only part of cuDNN 9's
// engines: for bfloat16 and float16 NCHW convolutions on Hopper they leave out
// the engines that convert to NHWC inside and run the sm90 implicit-GEMM
// kernels, which PyTorch gets through the same API. A CudnnGraphConv holds
// the operation graph of one problem and an execution plan for each of the
// first engine configurations cuDNN's heuristics (mode A) rank that it can
// finalize; cudnn_conv.cc times them beside its other routes once per problem
// and keeps the fastest.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<CudnnGraphConv> g,
//                    CudnnGraphConv::Create(api, handle, p, allow_tf32, 6));
//   for (int i = 0; i < g->num_plans(); ++i) { ... g->workspace_bytes(i) ... }
//   RETURN_IF_ERROR(g->Run(0, x, w, y, workspace));  // on the handle's stream
//
// Engines that compile kernels at run time (NVRTC) are left out, finalizing
// one can take seconds, except for depthwise convolutions (group ==
// in_channels): there cuDNN's precompiled engines are slow channels last
// (ConvNeXt-T's 7 x 7 layers on an H100, 2026-12-06: the step 1.75 ms with
// them, 1.14 ms with the compiled ones, whose creation took no longer).
// Also left out are, for float32 without TF32, engines that use
// tensor cores (they round the inputs), and engines that reduce in reduced
// precision. Not thread-safe: callers hold the handle's mutex.
#ifndef SLUICE_KERNELS_CUDA_CUDNN_GRAPH_CONV_H_
#define SLUICE_KERNELS_CUDA_CUDNN_GRAPH_CONV_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cudnn.h"
#include "device/cuda/cudnn_library.h"
#include "kernels/cuda/cudnn_conv.h"

namespace sluice::cuda {

// The byte alignment the plans assume of x, w, y and the workspace; Run
// refuses pointers that do not have it.
inline constexpr int64_t kCudnnGraphAlignment = 16;

class CudnnGraphConv {
 public:
  // The graph and up to `max_plans` execution plans for `p`. UNIMPLEMENTED
  // where the route does not apply (a transposed convolution, float64, one
  // spatial dim) or no engine finalizes; INTERNAL for other cuDNN errors.
  static absl::StatusOr<std::unique_ptr<CudnnGraphConv>> Create(
      const CudnnApi& api, cudnnHandle_t handle, const CudnnConvProblem& p,
      bool allow_tf32, int max_plans);

  ~CudnnGraphConv();
  CudnnGraphConv(const CudnnGraphConv&) = delete;
  CudnnGraphConv& operator=(const CudnnGraphConv&) = delete;

  int num_plans() const { return static_cast<int>(plans_.size()); }
  int64_t workspace_bytes(int plan) const { return plans_[plan].workspace; }
  // The engine's global index in cuDNN (for logs).
  int64_t engine(int plan) const { return plans_[plan].engine; }

  // Enqueues plan `plan` on the handle's stream. FAILED_PRECONDITION for a
  // pointer that is not kCudnnGraphAlignment-aligned; cuDNN's errors as
  // CudnnApi::Check gives them.
  absl::Status Run(int plan, const void* x, const void* w, void* y,
                   void* workspace) const;

 private:
  struct Plan {
    cudnnBackendDescriptor_t desc = nullptr;
    int64_t workspace = 0;
    int64_t engine = -1;
  };
  CudnnGraphConv(const CudnnApi& api, cudnnHandle_t handle)
      : api_(api), handle_(handle) {}

  const CudnnApi& api_;
  const cudnnHandle_t handle_;
  std::vector<cudnnBackendDescriptor_t> owned_;  // destroyed last to first
  std::vector<Plan> plans_;
};

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_CUDNN_GRAPH_CONV_H_
