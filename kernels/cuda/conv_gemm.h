// A 1x1 convolution as a GEMM: with one group, stride 1 and no padding, an
// NCHW convolution is one matrix product per image, y[n] (O x HW) =
// w (O x C) . x[n] (C x HW), which cuBLAS runs as one strided-batched GEMM;
// NHWC (channels_last) is one GEMM, y [N*HW, O] = x [N*HW, C] . w^T.
// At small batches cuBLAS splits the reduction over C where cuDNN's legacy
// kernels leave most of the GPU idle (ResNet-50's 1x1 convolutions over 7x7
// and 14x14 images at batch 1); cudnn_conv.cc times this route against
// cuDNN's algorithms once per problem and keeps the faster.
//
//   if (ConvIsGemm(p)) RETURN_IF_ERROR(RunConvAsGemm(gpu, p, x, w, y));
//
// CUDA-free header: pointers are device addresses. Thread-safe (the
// device's cuBLAS handle is used under its mutex).
#ifndef SLUICE_KERNELS_CUDA_CONV_GEMM_H_
#define SLUICE_KERNELS_CUDA_CONV_GEMM_H_

#include "absl/status/status.h"
#include "device/gpu_device.h"
#include "kernels/cuda/cudnn_conv.h"

namespace sluice::cuda {

// Whether `p` is a forward 1x1 convolution (every kernel extent 1, stride
// 1, no padding, one group) of float32, float16 or bfloat16 whose sizes fit
// cuBLAS's int arguments. Pure; needs no GPU.
bool ConvIsGemm(const CudnnConvProblem& p);

// Enqueues y = conv(x, w) on gpu's compute stream as cuBLAS GEMMs (float32
// with TF32 only where the device allows it, as MatMul). REQUIRES:
// ConvIsGemm(p); gpu current on this thread. Errors: cuBLAS missing or
// failing.
absl::Status RunConvAsGemm(GpuDevice* gpu, const CudnnConvProblem& p,
                           const void* x, const void* w, void* y);

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_CONV_GEMM_H_
