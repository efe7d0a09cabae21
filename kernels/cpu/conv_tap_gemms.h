// ConvTapGemmsNhwc: a dilated channels-last float32 convolution computed as
// one GEMM per filter tap over only the output positions where that tap
// reads the image, for windows whose taps mostly read padding.
// DeepLabV3's ASPP convolution at rate 12 on a 14 x 14 map (3 x 3, 960 ->
// 256 channels, 12 rows and columns of padding) multiplies 9 x 196 tap
// positions of which 18 x 18 read the image: here 324, a 5.4x smaller
// product. oneDNN 2.6 has no direct kernel for that window on AVX2 (the
// NHWC path declines its im2col + GEMM and reference loops), so it ran on
// sluice's loops: 28 ms of a 53 ms step at one thread, against 7.8 ms for
// onnxruntime, which runs every tap (bench/RESULTS.md, 2026-12-05).
//
//   if (TapGemmsPay(params, x.dim(1), x.dim(2), y->dim(1), y->dim(2),
//                   f.dim(1), f.dim(2))) {
//     ConvTapGemmsNhwc(pool, params, act, x, f, bias, side, y);
//   }
//
// Each tap's product is one Sgemm (oneDNN's sgemm kernel where built with
// it) on the calling thread, over the tap's rectangle of input pixels
// gathered into one matrix unless they are whole rows already (a product
// per row would stream the tap's filter rows once per row); the pool's
// threads take runs of output channels (or of images), so no two write the
// same output. Thread-safe: calls on different outputs are independent.
#ifndef SLUICE_KERNELS_CPU_CONV_TAP_GEMMS_H_
#define SLUICE_KERNELS_CPU_CONV_TAP_GEMMS_H_

#include <cstdint>

#include "core/tensor.h"
#include "graph/shape_fns.h"
#include "kernels/cpu/conv_activation.h"

namespace Eigen {
struct ThreadPoolDevice;
}  // namespace Eigen

namespace sluice::cpu {

// Whether the convolution `p` of an h x w image into oh x ow with a
// kh x kw filter is one ConvTapGemmsNhwc takes and computes in fewer
// multiply-adds than a direct kernel would: ungrouped, dilated, and at most
// half of the tap positions of the taps that read the image at all read it
// (taps that read only padding are left out either way, as LiveTaps in
// onednn_conv_nhwc.cc does).
bool TapGemmsPay(const Conv2DParams& p, int64_t h, int64_t w, int64_t oh,
                 int64_t ow, int64_t kh, int64_t kw);

// y = act(conv(x, f) + bias[o] + side), all NHWC.
// REQUIRES: TapGemmsPay for these shapes; x [N,H,W,C] and f [O,KH,KW,C]
// float32 host tensors; y [N,OH,OW,O] allocated; bias (O floats) and side
// (y's shape) may be null; `pool` may be null (one thread).
void ConvTapGemmsNhwc(const Eigen::ThreadPoolDevice* pool,
                      const Conv2DParams& p, ConvActivation act,
                      const Tensor& x, const Tensor& f, const float* bias,
                      const Tensor* side, Tensor* y);

// How many ConvTapGemmsNhwc calls ran since the process started (tests
// check that the path they mean to test was taken). Thread-safe.
int64_t ConvTapGemmsRuns();
// How many of them cut each image's output channels into runs for the
// pool's threads.
int64_t ConvTapGemmsChannelSplitRuns();

}  // namespace sluice::cpu

#endif  // SLUICE_KERNELS_CPU_CONV_TAP_GEMMS_H_
