// Conv and ConvTranspose on cuDNN (NCHW / NCDHW, and NHWC for 2-D forward
// convolutions; float32, float16, bfloat16 and float64), for the GPU
// Conv2D, ConvND and ConvTranspose kernels, which fall back to sluice's own CUDA kernels when RunCudnnConv says it did not
// run. CUDA-free header: pointers are device addresses.
//
//   CudnnConvProblem p = ...;            // dtype, channels, window
//   std::string why_not;
//   ASSIGN_OR_RETURN(bool ran, RunCudnnConv(ctx, gpu, p, x, w, y, &why_not));
//   if (!ran) RETURN_IF_ERROR(LaunchConvNd(...));   // our own kernel
//
// Per device (a GpuDevice resource, so per session) it keeps a cuDNN handle
// on the compute stream and per (shape, dtype, layout, window, math mode)
// the descriptors and cuDNN's algorithms, measured on the first call
// (cudnnFind*AlgorithmEx, as PyTorch's cudnn.benchmark does) and kept
// fastest first. The ways a problem can run (cuDNN's plain calls, its fused
// call, its graph API's plans, a cuBLAS GEMM for 1x1 convolutions) are
// Algorithms (kernels/algorithm.h) that the device's AlgorithmCache times
// once per problem; each call runs the fastest whose workspace it can
// allocate from the device's arena, so workspaces count against the
// device's memory limit and never exceed it; with none that fits the
// caller's own kernel runs. float32 uses TF32 tensor cores only when the
// device allows TF32 (cudnnSetConvolutionMathType), as MatMul does.
//
// Thread-safe: a device's cuDNN calls are serialised by its state's mutex
// (a cuDNN handle must not be used by two threads at once).
#ifndef SLUICE_KERNELS_CUDA_CUDNN_CONV_H_
#define SLUICE_KERNELS_CUDA_CUDNN_CONV_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/dtype.h"
#include "device/gpu_device.h"
#include "kernels/kernel.h"

namespace sluice::cuda {

// One convolution. The window is the forward convolution's, as in
// cpu::WindowNd: `image` is the forward input's spatial size (ConvND's x,
// ConvTranspose's y) and `positions` the forward output's (ConvND's y,
// ConvTranspose's x); position o reads image[o * stride - pad_begin +
// k * dilation]. `pad_end` is the padding after the image, implied by the
// sizes (cuDNN pads both ends alike: see CudnnCanExpress).
struct CudnnConvProblem {
  DataType dtype = DT_FLOAT;
  bool transpose = false;  // ConvTranspose: y = the adjoint of the window
  int64_t batch = 0;
  int64_t in_channels = 0;   // channels of x, the kernel's input
  int64_t out_channels = 0;  // channels of y, the kernel's output
  int64_t group = 1;
  std::vector<int64_t> image, positions, kernel, strides, dilations, pad_begin;
  // NHWC (graph/data_format.h; forward 2-D only): x [batch, image...,
  // in_channels], y [batch, positions..., out_channels] (and FusedConv2D's
  // side input), w [out, kernel..., in / group] (cuDNN's KRSC). Part of
  // the algorithm cache's key.
  bool channels_last = false;
};

// OK when cuDNN can express `p`; UNIMPLEMENTED saying why not: a dtype
// other than float32/16, bfloat16 or float64, more than 3 spatial dims, an
// empty tensor, sizes or element counts above 2^31 - 1, a negative pad,
// channels_last other than for a forward 2-D convolution, or
// a pad_end that cuDNN's symmetric padding cannot stand for (it pads
// pad_begin at both ends, which must give exactly `positions`). Pure; needs
// no GPU.
absl::Status CudnnCanExpress(const CudnnConvProblem& p);

// Runs `p` with cuDNN on `gpu` (ctx's device, current on this thread):
// x [batch, in_channels, ...], w the ONNX filter ([out, in / group, k...],
// ConvTranspose [in, out / group, k...]), y [batch, out_channels, ...], all
// of p.dtype in gpu's memory. Returns true when the convolution is enqueued
// on the compute stream; false when cuDNN was not used, with nothing
// enqueued and `why_not` saying why (the device does not use cuDNN,
// libcudnn is missing or too old, CudnnCanExpress, cuDNN has no algorithm
// for it, or no algorithm's workspace fits in the memory left). Errors: a
// cuDNN or CUDA failure while running.
//
// With `epilogue` and `epilogue_done` (FusedConv2D), a true return has
// applied y = relu(y + bias (+ side)) too (`*epilogue_done` true): in the
// same call where cuDNN's fused call was timed fastest
// (cudnnConvolutionBiasActivationForward: float32 forward convolutions
// with Relu), else with sluice's epilogue kernel after the convolution.
struct CudnnEpilogue {
  const void* bias = nullptr;  // [out_channels], p.dtype
  const void* side = nullptr;  // null, or y's shape and dtype
  bool relu = false;
};
absl::StatusOr<bool> RunCudnnConv(OpKernelContext* ctx, GpuDevice* gpu,
                                  const CudnnConvProblem& p, const void* x,
                                  const void* w, void* y,
                                  std::string* why_not,
                                  const CudnnEpilogue* epilogue = nullptr,
                                  bool* epilogue_done = nullptr);

// How RunCudnnConv picks the way (path) a problem runs. By default
// (kMeasure) the first ordinary step of a problem times the paths open to
// it and keeps the fastest: cuDNN's plain call (then sluice's epilogue
// kernel, for FusedConv2D), cuDNN's fused call (float32 with Relu), and for
// a 1x1 convolution one cuBLAS GEMM (conv_gemm.h; then the epilogue
// kernel), and for forward 2D/3D convolutions the plans of cuDNN's graph
// API (cudnn_graph_conv.h; then the epilogue kernel). kFused (for tests of
// the fused call) takes the fused call wherever cuDNN accepts it; kGemm
// (for tests of the GEMM path) takes the GEMM wherever ConvIsGemm; kGraph
// (for tests of the graph path) takes the graph API's first plan wherever
// it has one.
enum class CudnnPathPolicy { kMeasure, kFused, kGemm, kGraph };
// Sets the policy of `gpu`'s cache (one device: other devices, and so other
// sessions, keep theirs); set it before the problems run. For tests.
// FAILED_PRECONDITION when `gpu` does not use cuDNN or cuDNN is unusable.
absl::Status SetCudnnPathPolicyForTesting(GpuDevice* gpu, CudnnPathPolicy policy);

// What a device's algorithm cache holds, for tests and diagnostics.
struct CudnnConvAlgorithm {
  int algo = 0;                 // cudnnConvolution{Fwd,BwdData}Algo_t
  int64_t workspace_bytes = 0;  // what it needs
  float time_ms = 0;            // measured (-1: heuristic order only)
  int math_type = 0;            // cudnnMathType_t
};
struct CudnnConvCacheEntry {
  std::string key;  // dtype, transpose, shapes, window, math mode
  // Fastest first, as measured with at most `find_workspace_bytes` of
  // workspace (what the memory limit allowed when it was measured).
  std::vector<CudnnConvAlgorithm> algorithms;
  int64_t find_workspace_bytes = 0;
  bool measured = false;
  std::string unsupported;  // non-empty: cuDNN refused it; why
  int last_algo = -1;       // the one the last run used
  int64_t last_workspace_bytes = 0;
  int64_t runs = 0;
  int64_t fused_runs = 0;     // of `runs`, those with the epilogue fused
  std::string fused_refused;  // non-empty: why the fused call is not used
  bool path_measured = false;  // the ways were timed (kMeasure)
  // What timing them found (AlgorithmCache::Entry::timings): "plain algo 1
  // 0.1 ms, fused algo 1 0.2 ms, gemm 0.08 ms, graph engine 7 0.09 ms
  // (1024 B workspace), ...: gemm" (after the colon, the way kept); empty
  // until timed.
  std::string path_timings;
  int64_t gemm_runs = 0;       // of `runs`, those on cuBLAS (conv_gemm.h)
  // Of `runs`, those on a plan of cuDNN's graph API, and that plan's
  // engine (its global index; -1 when none is used).
  int64_t graph_runs = 0;
  int64_t graph_engine = -1;
  std::string graph_refused;  // non-empty: why the graph API is not used
};
// The device's cache (empty when cuDNN was never used on it).
std::vector<CudnnConvCacheEntry> CudnnConvCache(GpuDevice* gpu);

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_CUDNN_CONV_H_
