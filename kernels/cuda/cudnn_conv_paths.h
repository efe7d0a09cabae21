// The ways (paths) a cuDNN convolution runs, for kernels/cuda/cudnn_conv.cc
// only: what the device's cache keeps per problem (Entry), the ConvPath
// objects RunCudnnConv tries in order (the plan of cuDNN's graph API, a
// cuBLAS GEMM for 1x1 convolutions, cuDNN's legacy calls, fused or plain),
// and ChoosePath, which times them once per problem and keeps the fastest.
// Not a public interface: kernels use cudnn_conv.h.
//
//   for (const ConvPath* path : ConvPaths()) {
//     if (!path->CanImplement(call, policy, *e)) continue;
//     ASSIGN_OR_RETURN(bool ran, path->Run(call, e, epilogue_done, &why));
//     if (ran) return true;
//   }
//
// Thread-safety: an Entry and the cuDNN handle are used only under the
// device's CudnnConvState mutex (the caller holds it); the paths are
// stateless.
#ifndef SLUICE_KERNELS_CUDA_CUDNN_CONV_PATHS_H_
#define SLUICE_KERNELS_CUDA_CUDNN_CONV_PATHS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "cudnn.h"
#include "device/cuda/cudnn_library.h"
#include "device/gpu_device.h"
#include "kernels/cuda/cudnn_conv.h"
#include "kernels/cuda/cudnn_graph_conv.h"
#include "kernels/cuda/library_handle_cache.h"
#include "kernels/kernel.h"

namespace sluice::cuda::cudnn_conv_internal {

// last_algo of a problem run as a cuBLAS GEMM (conv_gemm.h), or on a plan of
// cuDNN's graph API (cudnn_graph_conv.h).
constexpr int kGemmAlgo = -2;
constexpr int kGraphAlgo = -3;

struct Candidate {
  int algo = 0;
  size_t memory = 0;
  float time_ms = -1;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};

// The descriptors of one problem, and what was learnt about it.
struct Entry {
  explicit Entry(const CudnnApi* api) : api(api) {}
  ~Entry() {
    if (x != nullptr) api->DestroyTensorDescriptor(x);
    if (y != nullptr) api->DestroyTensorDescriptor(y);
    if (w != nullptr) api->DestroyFilterDescriptor(w);
    if (conv != nullptr) api->DestroyConvolutionDescriptor(conv);
    if (bias != nullptr) api->DestroyTensorDescriptor(bias);
    if (relu != nullptr) api->DestroyActivationDescriptor(relu);
  }
  Entry(const Entry&) = delete;
  Entry& operator=(const Entry&) = delete;

  const CudnnApi* const api;
  // x: the forward input (image), y: the forward output (positions).
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  // For the fused epilogue, made on first use: bias [1, O, 1...], Relu.
  cudnnTensorDescriptor_t bias = nullptr;
  cudnnActivationDescriptor_t relu = nullptr;
  std::string fused_refused;  // non-empty: the fused call is not used; why
  int64_t fused_runs = 0;
  // What ChoosePath found fastest: the fused call's algorithm (-1: the
  // plain call is used), or the GEMM route.
  bool path_measured = false;
  int fused_algo = -1;
  bool use_gemm = false;
  int64_t gemm_runs = 0;
  // cuDNN's graph API (made when first measured) and the plan kept (-1:
  // none), or why it is not used.
  std::unique_ptr<CudnnGraphConv> graph;
  int graph_plan = -1;
  std::string graph_refused;
  int64_t graph_runs = 0;
  cudnnMathType_t requested_math = CUDNN_DEFAULT_MATH;
  std::vector<Candidate> candidates;  // fastest first
  int64_t find_workspace = 0;
  bool measured = false;
  std::string unsupported;
  std::string path_timings;  // what ChoosePath measured, for CudnnConvCache
  int last_algo = -1;
  int64_t last_workspace = 0;
  int64_t runs = 0;
};

// A device's settings of its cache: which paths a problem may take.
struct CudnnConvOptions {
  CudnnPathPolicy policy = CudnnPathPolicy::kMeasure;
};

using CudnnConvState =
    LibraryHandleCache<CudnnApi, cudnnHandle_t, Entry, CudnnConvOptions>;

// One call of RunCudnnConv, as the paths see it.
struct ConvCall {
  OpKernelContext* ctx;
  GpuDevice* gpu;
  const CudnnConvState* st;
  const CudnnConvProblem* p;
  const void* x;
  const void* w;
  void* y;
  const CudnnEpilogue* epilogue;  // null: none
  bool fuse;  // the legacy path tries cuDNN's fused call (the epilogue) first
  const std::string* key;  // CacheKey
};

// A way to run a convolution, as CUTLASS's operations are: whether it can
// implement a call, the workspace its next run needs, and running it.
// RunCudnnConv tries the paths in order (graph, GEMM, legacy) and the first
// that runs wins. Which of them may run is decided once per problem, by
// ChoosePath timing them (CudnnPathPolicy::kMeasure) or by the device's
// policy. Stateless: what a problem learnt is in its Entry.
class ConvPath {
 public:
  virtual ~ConvPath() = default;
  // Whether this path may run `call` under `policy`, given what `e` learnt.
  virtual bool CanImplement(const ConvCall& call, CudnnPathPolicy policy,
                            const Entry& e) const = 0;
  // Bytes of workspace its next run asks the device's arena for.
  // REQUIRES: CanImplement.
  virtual int64_t WorkspaceBytes(const Entry& e) const = 0;
  // Runs `call`: true when it is enqueued (e's counters updated,
  // *epilogue_done set where the epilogue ran in the same call); false when
  // the next path should run, with `why_not` set where this path has the
  // last word. Errors: a cuDNN, cuBLAS or CUDA failure.
  virtual absl::StatusOr<bool> Run(const ConvCall& call, Entry* e,
                                   bool* epilogue_done,
                                   std::string* why_not) const = 0;
};

// The paths in the order RunCudnnConv tries them: graph, GEMM, legacy.
absl::Span<const ConvPath* const> ConvPaths();

// The fused epilogue's descriptors (float32 bias [1, O, 1...] and Relu,
// NaN propagated as the CPU kernel does), made once per entry.
absl::Status EnsureEpilogueDescriptors(const CudnnApi& api,
                                       const CudnnConvProblem& p, Entry* e);

// Makes e->graph on first use; false (with e->graph_refused) where the
// graph API has no usable plan for the problem.
bool MakeGraph(const CudnnConvState& st, const CudnnConvProblem& p, bool allow_tf32,
               Entry* e);

// Decides once per problem how it runs (CudnnPathPolicy::kMeasure): times
// the fastest plain cuDNN call (followed by sluice's epilogue kernel where
// there is an epilogue), with `try_fused` cuDNN's fused call for the
// fastest few algorithms (it runs other kernels than the plain call for the
// same algorithm, sometimes much slower ones), and with `try_gemm` the 1x1
// convolution as a cuBLAS GEMM (then the epilogue kernel), and with
// `try_graph` each plan of cuDNN's graph API (then the epilogue kernel).
// All write y, which the step then writes for real. Sets e->fused_algo or
// e->fused_refused (with try_fused), e->use_gemm, e->graph_plan or
// e->graph_refused, and e->path_timings. REQUIRES: e measured, not
// recording.
absl::Status ChoosePath(OpKernelContext* ctx, GpuDevice* gpu,
                        const CudnnConvState& st, const CudnnConvProblem& p,
                        const void* x, const void* w, void* y,
                        const CudnnEpilogue* ep, bool try_fused, bool try_gemm,
                        bool try_graph, Entry* e);

}  // namespace sluice::cuda::cudnn_conv_internal

#endif  // SLUICE_KERNELS_CUDA_CUDNN_CONV_PATHS_H_
