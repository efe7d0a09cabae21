// OneDnnConv: the fast CPU path of Conv2D and FusedConv2D for float32 on
// oneDNN's convolution primitive (dnnl::convolution_forward, Debian's
// libdnnl-dev), with the bias, a residual (oneDNN's `sum` post-op) and the
// activation (eltwise relu, or clip to [0, 6] for ReLU6) inside the
// primitive. conv.cc's loops stay the reference and the fallback.
//
//   std::unique_ptr<OneDnnConv> conv = OneDnnConv::Create(params, act);
//   ASSIGN_OR_RETURN(bool ran, conv->Compute(ctx, x, f, bias, side, y));
//   if (!ran) { /* oneDNN declined this shape: run the reference loop */ }
//
// Threads: like Sgemm (sgemm.h), every oneDNN call runs serially on the
// thread that makes it (its OpenMP thread count set to 1), so no OpenMP
// team ever spins beside sluice's pool; the parallelism is the session's
// intra-op pool's (RunBlocks), which splits each image's output channels
// (or groups) into one slice per thread, each slice its own primitive.
// Layouts: oneDNN picks them (format `any`: nChw8c on AVX2, nChw16c on
// AVX-512); the input is reordered into it and the output out of it on
// every call, the filter once per filter buffer (cached).
//
// Thread-safe: Compute may run on several threads at once; plans (the
// primitives per input shape and thread count) and reordered filters are
// cached under a mutex.
#ifndef SLUICE_KERNELS_CPU_ONEDNN_CONV_H_
#define SLUICE_KERNELS_CPU_ONEDNN_CONV_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "graph/shape_fns.h"
#include "kernels/kernel.h"

namespace sluice::cpu {

enum class ConvActivation { kNone, kRelu, kRelu6 };

class OneDnnConv {
 public:
  // nullptr when this build has no oneDNN or ConvUsesOneDnn() is false.
  // REQUIRES: CheckConv2DParams(params) is OK.
  static std::unique_ptr<OneDnnConv> Create(const Conv2DParams& params,
                                            ConvActivation activation);

  virtual ~OneDnnConv() = default;

  // y = act(conv(x, f) + bias[o] + side). Returns false, having written
  // nothing, when oneDNN declines the problem (no primitive, or only its
  // reference loops or its im2col + GEMM, which conv.cc does as well): the
  // caller runs its own loops.
  // REQUIRES: x [N,C,H,W] and f [O,C/group,KH,KW] are float32 host tensors
  // Conv2DShape accepted; y is allocated with the shape it gave and is not
  // empty; bias (O floats) and side (y's shape) may be null.
  //
  // The filter, once reordered, is reused while it is the same buffer, on
  // the runtime's rule that a tensor is not written after it is produced
  // (a Const's value is one buffer for the session's life).
  virtual absl::StatusOr<bool> Compute(OpKernelContext* ctx, const Tensor& x,
                                       const Tensor& f, const float* bias,
                                       const Tensor* side, Tensor* y) = 0;
};

// Whether Conv2D / FusedConv2D kernels created from now on use oneDNN
// (where it is built in): on by default; SLUICE_CPU_CONV=reference in the
// environment turns it off (read once), SetConvUseOneDnn overrides both
// (tests). Thread-safe (an atomic flag, read when a kernel is created).
bool ConvUsesOneDnn();
void SetConvUseOneDnn(bool use);

// How many Compute calls ran on oneDNN since the process started (tests
// check that the path they mean to test was taken). Thread-safe.
int64_t OneDnnConvRuns();

}  // namespace sluice::cpu

#endif  // SLUICE_KERNELS_CPU_ONEDNN_CONV_H_
