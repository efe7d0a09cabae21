// OneDnnConvNhwc: Conv2D and FusedConv2D channels last (data_format NHWC,
// graph/data_format.h) for float32 on oneDNN's convolution primitive,
// reading and writing sluice's NHWC tensors where they are: no reorder of
// the activations, the filter reordered once per filter buffer. Bias, a
// residual (a binary add post-op reading the side tensor in place) and the
// activation (conv_activation.h, as eltwise post-ops) run inside the
// primitive. A dilated window whose taps mostly read padding (DeepLabV3's
// ASPP) runs as one GEMM per tap instead (conv_tap_gemms.h). A 3 x 3
// window at stride 1 (ungrouped, undilated, no residual) with at least
// 2 M multiply-adds a slice, a filter of at most 1 MiB and a scratchpad of
// at most 4 MiB runs on oneDNN's Winograd convolution where this CPU has
// one (AVX-512), its rows reordered into channel blocks and back around
// each call: in practice F(2x2, 3x3) on whole images (one thread, or a
// team), as the bands of two threads pad unevenly and only F(4x4, 3x3),
// with a 7 MB scratchpad, takes those. The limits keep the first step's
// host memory within issue 29's bound (Winograd's filter copy is 16/9 of
// the filter; bench/RESULTS.md, 2026-12-06).
//
//   std::unique_ptr<OneDnnConvNhwc> conv = OneDnnConvNhwc::Create(p, act);
//   ASSIGN_OR_RETURN(bool ran, conv->Compute(ctx, x, f, bias, side, y));
//   if (!ran) { /* declined: run the NCHW path between permutations */ }
//
// Threads: with more than two intra-op threads the whole batch is one
// primitive, run on oneDNN's OpenMP team of the intra-op pool's size from
// the calling thread (OmpThreads in onednn_runtime.h), which splits it
// over images, rows and channel blocks as oneDNN's own kernels choose.
// Measured on the H200 host (16 cores, 2026-12-04): ResNet-50's 53
// batch-1 convolutions this way take 6.3 ms, against 11.9 ms with NCHW
// activations reordered into channel blocks and back around each call,
// and onnxruntime's whole step 9.4 ms (bench/RESULTS.md). With one or two,
// the call is cut into slices for the pool's own threads (runs of images;
// runs of output channels where the filter outweighs the output, each
// written into a buffer of its own and copied into y, so that the threads
// share the filter's reads; else bands of an image's output rows, each
// reading its rows in place), each slice a serial primitive: a team's
// worker spins after each call, and on a shared 2-core machine it took the
// cores from the pool threads that run the next node (bench/RESULTS.md,
// 2026-12-05).
// Thread-safe: Compute may run on several threads at once; plans (per
// slice shape and thread count) and reordered filters (shared by plans of
// one layout) are cached under a mutex.
#ifndef SLUICE_KERNELS_CPU_ONEDNN_CONV_NHWC_H_
#define SLUICE_KERNELS_CPU_ONEDNN_CONV_NHWC_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "graph/shape_fns.h"
#include "kernels/cpu/onednn_conv.h"
#include "kernels/kernel.h"

namespace sluice::cpu {

class OneDnnConvNhwc {
 public:
  // nullptr when this build has no oneDNN.
  // REQUIRES: CheckConv2DParams(params) is OK.
  static std::unique_ptr<OneDnnConvNhwc> Create(const Conv2DParams& params,
                                                ConvActivation activation);

  virtual ~OneDnnConvNhwc() = default;

  // y = act(conv(x, f) + bias[o] + side), all NHWC. Returns false, having
  // written nothing, when oneDNN has no primitive for the problem but its
  // reference loops or its im2col + GEMM (OneDnnImplDeclined).
  // REQUIRES: x [N,H,W,C] and f [O,KH,KW,C/group] are float32 host tensors
  // the NHWC Conv2DShape accepted; y [N,OH,OW,O] is allocated and not
  // empty; bias (O floats) and side (y's shape) may be null.
  //
  // The filter, once reordered, is reused while it is the same buffer (see
  // OneDnnConv::Compute); the latest 8 are kept.
  virtual absl::StatusOr<bool> Compute(OpKernelContext* ctx, const Tensor& x,
                                       const Tensor& f, const float* bias,
                                       const Tensor* side, Tensor* y) = 0;
};

// How many Compute calls ran on oneDNN since the process started (tests
// check that the path they mean to test was taken). Thread-safe.
int64_t OneDnnConvNhwcRuns();
// How many slices of those calls ran on oneDNN's Winograd convolution.
int64_t OneDnnConvNhwcWinogradSlices();
// Whether oneDNN has a Winograd convolution on this CPU (it makes one for
// a 64-channel 3 x 3 problem): false without AVX-512, or without oneDNN.
bool OneDnnConvNhwcHasWinograd();

}  // namespace sluice::cpu

#endif  // SLUICE_KERNELS_CPU_ONEDNN_CONV_NHWC_H_
