// OneDnnConv: the fast CPU path of Conv2D and FusedConv2D for float32 on
// oneDNN's convolution primitive (dnnl::convolution_forward, Debian's
// libdnnl-dev), with the bias, a residual (oneDNN's `sum` post-op) and the
// activation (conv_activation.h, as eltwise post-ops) inside the
// primitive. conv.cc's loops stay the reference and the fallback.
//
//   std::unique_ptr<OneDnnConv> conv = OneDnnConv::Create(params, act);
//   ASSIGN_OR_RETURN(bool ran, conv->Compute(ctx, x, f, bias, side, y));
//   if (!ran) { /* oneDNN declined this shape: run the reference loop */ }
//
// Threads: like Sgemm (sgemm.h), every oneDNN call runs serially on the
// thread that makes it (its OpenMP thread count set to 1), so no OpenMP
// team ever spins beside sluice's pool; the parallelism is the session's
// intra-op pool's (RunBlocks), which splits each image's output into
// slices of output channels (or groups) and, when an image has fewer
// channel blocks than the pool has threads, bands of output rows
// (PlanConvSlicing), each slice its own primitive.
// Layouts: the input in channel blocks of the vector width (nChw16c with
// AVX-512, nChw8c with AVX2; plain nchw where oneDNN asks for it, as for a
// 3-channel stem), the output and filter in what oneDNN picks; the input
// is reordered in and the output out on every call, the filter once per
// filter buffer (cached).
//
// Thread-safe: Compute may run on several threads at once; plans (the
// primitives per input shape and thread count) and reordered filters are
// cached under a mutex.
#ifndef SLUICE_KERNELS_CPU_ONEDNN_CONV_H_
#define SLUICE_KERNELS_CPU_ONEDNN_CONV_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "graph/shape_fns.h"
#include "kernels/cpu/conv_activation.h"
#include "kernels/kernel.h"

namespace sluice::cpu {

class OneDnnConv {
 public:
  // nullptr when this build has no oneDNN.
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
  // (a Const's value is one buffer for the session's life). The latest 8
  // filters per kernel are kept, and so pinned: a filter computed each
  // step is reordered each step.
  virtual absl::StatusOr<bool> Compute(OpKernelContext* ctx, const Tensor& x,
                                       const Tensor& f, const float* bias,
                                       const Tensor* side, Tensor* y) = 0;
};

// Whether this build has oneDNN's convolutions (Debian's libdnnl-dev), and
// which oneDNN ("oneDNN 3.0.0"; "not built in"). Which path a convolution
// takes is its provider's setting (kernels/cpu/cpu_provider.h,
// RuntimeConfig.cpu_convolutions).
bool OneDnnConvolutionsBuiltIn();
std::string OneDnnVersion();
// Whether oneDNN runs AVX-512 (avx512_core or above) on this CPU; false
// without it.
bool OneDnnHasAvx512();

// Whether kAuto runs a convolution with this window, output plane,
// channels per group, groups, batch and intra-op thread count on oneDNN.
// Not 1x1 windows: those are one GEMM on the NCHW input as it is, and the
// reorders into and out of oneDNN's layouts cost more than its kernel
// saves; not depthwise ones on planes larger than 14x14, where the loops'
// flat 3x3 sums were faster (bench/RESULTS.md, 2026-12-02 05:14 entry);
// and not where an image has fewer output-channel blocks than threads (cut
// into bands of rows as well, those measured slower than the loops at 16
// threads; cpu_convolutions ONEDNN still runs them so).
bool PreferOneDnn(int64_t kh, int64_t kw, int64_t oh, int64_t ow,
                  int64_t in_per_group, int64_t out_per_group, int64_t groups,
                  int64_t batch, int threads);

// How many Compute calls ran on oneDNN since the process started (tests
// check that the path they mean to test was taken), and how many of those
// cut an image's output rows into bands. Thread-safe.
int64_t OneDnnConvRuns();
int64_t OneDnnConvRowSlicedRuns();

// How one image's output is cut: channel_parts runs of channel units (vector
// blocks of output channels, or runs of groups) times row_parts bands of
// output rows, each slice its own primitive.
struct ConvSlicing {
  int64_t channel_parts = 1, row_parts = 1;
  int64_t slices() const { return channel_parts * row_parts; }
};

// The cut for `batch` images of `units` channel units and `rows` output
// rows, `macs` multiply-adds per image, on `threads` threads: the one whose
// slowest thread finishes first (waves of slices, each its largest
// slice's work plus a fixed cost per slice), with no slice below
// `min_slice_macs` of work; on a tie, fewer slices, then fewer row bands
// (a band rereads the rows its window overlaps). No cut (1 x 1) with one
// thread or a batch at least as large as the pool (cut by image).
ConvSlicing PlanConvSlicing(int64_t units, int64_t rows, int64_t macs,
                            int64_t batch, int threads,
                            int64_t min_slice_macs);

// The least work a slice is given, in multiply-adds (about 5-10 us of one
// core): below it the slice's own reorders and call cost more than the
// extra thread saves.
inline constexpr int64_t kMinConvSliceMacs = int64_t{1} << 18;

// The minimum kernels created from now on plan with (tests lower it so that
// small problems are cut into bands); 0 restores kMinConvSliceMacs.
// Thread-safe (an atomic).
void SetMinConvSliceMacs(int64_t macs);
// The least work a slice is given now: SetMinConvSliceMacs's value, else
// kMinConvSliceMacs. Thread-safe.
int64_t MinConvSliceMacs();

}  // namespace sluice::cpu

#endif  // SLUICE_KERNELS_CPU_ONEDNN_CONV_H_
