// The ways (algorithms) a cuDNN convolution runs, for
// kernels/cuda/cudnn_conv.cc only: what the device's library cache keeps
// per problem (Entry: descriptors, cuDNN's measured algorithms, the graph
// API's plans, counters), and the candidates RunCudnnConv hands the
// device's AlgorithmCache (kernels/algorithm_cache.h), which times them
// once per problem and keeps the fastest: cuDNN's legacy calls, plain (then
// sluice's epilogue kernel) or fused, the plans of cuDNN's graph API, and a
// cuBLAS GEMM for 1x1 convolutions. Not a public interface: kernels use
// cudnn_conv.h.
//
//   ConvAlgorithms algorithms(call, policy);
//   ASSIGN_OR_RETURN(AlgorithmCache::Ran ran,
//                    cache->Run(key, algorithms.list(), call, options, &device));
//   if (ran.index >= 0) algorithms.list()[ran.index]->Count(e, ran.workspace_bytes);
//
// Thread-safety: an Entry and the cuDNN handle are used only under the
// device's CudnnConvState mutex (the caller holds it); the algorithms hold
// no state of their own.
#ifndef SLUICE_KERNELS_CUDA_CUDNN_CONV_PATHS_H_
#define SLUICE_KERNELS_CUDA_CUDNN_CONV_PATHS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cudnn.h"
#include "device/cuda/cudnn_library.h"
#include "device/gpu_device.h"
#include "kernels/cuda/cudnn_conv.h"
#include "kernels/algorithm.h"
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
  // Non-empty: the fused call is not used (cuDNN refused it, or timing
  // found a faster way); why.
  std::string fused_refused;
  std::string fused_error;  // the last refusal of the fused call
  int64_t fused_runs = 0;
  int64_t gemm_runs = 0;
  // cuDNN's graph API (made when first timed), the plan that last ran (-1:
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

// One call of RunCudnnConv, as the algorithms see it.
struct ConvCall {
  OpKernelContext* ctx;
  GpuDevice* gpu;
  const CudnnConvState* st;
  const CudnnConvProblem* p;
  const void* x;
  const void* w;
  void* y;
  // Null: none. Otherwise every algorithm applies it: the fused call in
  // cuDNN, the others with sluice's epilogue kernel after.
  const CudnnEpilogue* epilogue;
  Entry* e;
};

// One way to run a convolution; Count records a run in the entry's
// counters (after the AlgorithmCache ran it: timing runs are not counted).
class ConvAlgorithm : public Algorithm<ConvCall> {
 public:
  virtual void Count(Entry* e, int64_t workspace_bytes) const = 0;
};

// The candidates of one call, in the order they run untimed (while a CUDA
// graph is recorded, or under a forced policy): under kMeasure the fused
// call with the first few of cuDNN's measured algorithms (where the
// epilogue can be fused), the plain calls with each (ranked: cudnnFind
// timed them), the GEMM for a 1x1 convolution, the graph API's plans
// (once e->graph is made); kFused, kGemm and kGraph put that path first
// and the legacy calls after. The list depends only on the problem, the
// policy and what the entry has made, so a timed choice stands.
class ConvAlgorithms {
 public:
  ConvAlgorithms(const ConvCall& call, CudnnPathPolicy policy);
  ConvAlgorithms(const ConvAlgorithms&) = delete;
  ConvAlgorithms& operator=(const ConvAlgorithms&) = delete;

  const std::vector<const Algorithm<ConvCall>*>& list() const { return list_; }
  const ConvAlgorithm& at(int i) const { return *owned_[i]; }

 private:
  std::vector<std::unique_ptr<ConvAlgorithm>> owned_;
  std::vector<const Algorithm<ConvCall>*> list_;
};

// Whether the fused call may be tried for `call` (float32 forward
// convolutions with Relu: cuDNN's legacy fused call takes every algorithm
// with Relu, only one without).
bool MayFuse(const ConvCall& call);

// The fused epilogue's descriptors (float32 bias [1, O, 1...] and Relu,
// NaN propagated as the CPU kernel does), made once per entry.
absl::Status EnsureEpilogueDescriptors(const CudnnApi& api,
                                       const CudnnConvProblem& p, Entry* e);

// Makes e->graph on first use; false (with e->graph_refused) where the
// graph API has no usable plan for the problem.
bool MakeGraph(const CudnnConvState& st, const CudnnConvProblem& p, bool allow_tf32,
               Entry* e);

}  // namespace sluice::cuda::cudnn_conv_internal

#endif  // SLUICE_KERNELS_CUDA_CUDNN_CONV_PATHS_H_
