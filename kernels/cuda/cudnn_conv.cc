// Conv and ConvTranspose through cuDNN's legacy convolution API:
// cudnnConvolutionForward, and cudnnConvolutionBackwardData for
// ConvTranspose (the adjoint of the forward convolution whose input is
// ConvTranspose's output). Descriptors, the measured algorithm list and the
// last choice are cached per (problem, math mode) in a per-device state.
#include "kernels/cuda/cudnn_conv.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "core/status_macros.h"
#include "cuda_runtime_api.h"
#include "device/cuda/cuda_status.h"
#include "device/cuda/cudnn_library.h"
#include "device/gpu_graph.h"
#include "kernels/cuda/bias_activation.h"
#include "kernels/cuda/conv_gemm.h"
#include "kernels/cuda/cudnn_graph_conv.h"
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/library_handle_cache.h"

namespace sluice::cuda {
namespace {

constexpr char kResourceKey[] = "cudnn_conv";
// The workspace an algorithm may have: at most this, and at most an eighth
// of the device's memory limit (TensorFlow's default cap is 4 GiB; ResNet-50's
// convolutions want far less). Below kMinTryWorkspace the search for a
// workspace that fits stops at zero.
constexpr int64_t kMaxWorkspaceBytes = int64_t{1} << 30;
constexpr int64_t kMinTryWorkspace = int64_t{64} << 10;
// What measuring offers at least: the heuristics report 0 bytes for
// problems where the fastest algorithm (IMPLICIT_PRECOMP_GEMM) wants a few
// KiB, and an algorithm measured without its workspace is never a candidate.
constexpr int64_t kMinFindWorkspace = int64_t{16} << 20;
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
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

// The device's state: a cuDNN handle on its compute stream, and the cache.
absl::StatusOr<CudnnConvState*> StateFor(GpuDevice* gpu) {
  ASSIGN_OR_RETURN(const CudnnApi* api, GetCudnn());
  return CudnnConvState::For(gpu, kResourceKey, api, [&](cudnnHandle_t* handle) {
    RETURN_IF_ERROR(
        api->Check(api->Create(handle), absl::StrCat(gpu->name(), ": cudnnCreate")));
    absl::Status s = api->Check(
        api->SetStream(*handle, static_cast<cudaStream_t>(gpu->compute_stream())),
        "cudnnSetStream");
    if (!s.ok()) api->Destroy(*handle);
    return s;
  });
}

absl::StatusOr<cudnnDataType_t> DataTypeFor(DataType dtype) {
  switch (dtype) {
    case DT_FLOAT: return CUDNN_DATA_FLOAT;
    case DT_FLOAT16: return CUDNN_DATA_HALF;
    case DT_BFLOAT16: return CUDNN_DATA_BFLOAT16;
    case DT_DOUBLE: return CUDNN_DATA_DOUBLE;
    default:
      return absl::UnimplementedError(
          absl::StrCat("cuDNN convolutions take float32, float16, bfloat16 or "
                       "float64, not ", DataTypeName(dtype)));
  }
}

// The forward output size cuDNN computes along one dim with pad `pad` at
// both ends.
int64_t CudnnOutSize(int64_t image, int64_t pad, int64_t kernel,
                     int64_t stride, int64_t dilation) {
  const int64_t span = (kernel - 1) * dilation + 1;
  const int64_t room = image + 2 * pad - span;
  return room < 0 ? 0 : room / stride + 1;
}

std::string Join(const std::vector<int64_t>& v) { return absl::StrJoin(v, ","); }

// Row-major strides of `dims`, as int.
std::vector<int> PackedStrides(const std::vector<int>& dims) {
  std::vector<int> strides(dims.size(), 1);
  for (int d = static_cast<int>(dims.size()) - 2; d >= 0; --d) {
    strides[d] = strides[d + 1] * dims[d + 1];
  }
  return strides;
}

// The strides of [N, C, spatial...] dims lying channels last
// ([N, spatial..., C]), as int.
std::vector<int> ChannelsLastStrides(const std::vector<int>& dims) {
  std::vector<int> strides(dims.size(), 1);
  int step = dims[1];  // C is innermost
  for (int d = static_cast<int>(dims.size()) - 1; d >= 2; --d) {
    strides[d] = step;
    step *= dims[d];
  }
  strides[0] = step;
  return strides;
}

cudnnMathType_t MathFor(DataType dtype, bool allow_tf32) {
  switch (dtype) {
    // CUDNN_DEFAULT_MATH lets float32 use TF32 tensor cores on Ampere and
    // later; CUDNN_FMA_MATH keeps it to FMA kernels.
    case DT_FLOAT: return allow_tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
    case DT_FLOAT16:
    case DT_BFLOAT16: return CUDNN_TENSOR_OP_MATH;
    default: return CUDNN_DEFAULT_MATH;
  }
}

// Whether a measured result may be used under the requested math mode:
// float32 without TF32 takes no result measured with tensor-op math (a
// result reported as CUDNN_DEFAULT_MATH is kept: RunOne runs every
// algorithm with CUDNN_FMA_MATH set then, so TF32 is never used).
bool MathAllowed(cudnnMathType_t requested, cudnnMathType_t got) {
  return requested != CUDNN_FMA_MATH ||
         (got != CUDNN_TENSOR_OP_MATH &&
          got != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION);
}

// The descriptors of `p`: 1-D problems become 2-D with a height of 1.
absl::Status MakeDescriptors(const CudnnConvProblem& p, cudnnMathType_t math,
                             Entry* e) {
  const CudnnApi& api = *e->api;
  ASSIGN_OR_RETURN(cudnnDataType_t data, DataTypeFor(p.dtype));
  const cudnnDataType_t compute =
      p.dtype == DT_DOUBLE ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  const bool one_d = p.image.size() == 1;
  const int nd = one_d ? 2 : static_cast<int>(p.image.size());
  auto spatial = [&](const std::vector<int64_t>& v, int64_t pad_with) {
    std::vector<int> out;
    if (one_d) out.push_back(static_cast<int>(pad_with));
    for (int64_t d : v) out.push_back(static_cast<int>(d));
    return out;
  };
  // Forward input (image) and output (positions) channels.
  const int64_t image_c = p.transpose ? p.out_channels : p.in_channels;
  const int64_t pos_c = p.transpose ? p.in_channels : p.out_channels;
  std::vector<int> xdims = {static_cast<int>(p.batch), static_cast<int>(image_c)};
  std::vector<int> ydims = {static_cast<int>(p.batch), static_cast<int>(pos_c)};
  std::vector<int> wdims = {static_cast<int>(pos_c),
                            static_cast<int>(image_c / p.group)};
  for (int v : spatial(p.image, 1)) xdims.push_back(v);
  for (int v : spatial(p.positions, 1)) ydims.push_back(v);
  for (int v : spatial(p.kernel, 1)) wdims.push_back(v);
  const std::vector<int> pads = spatial(p.pad_begin, 0);
  const std::vector<int> strides = spatial(p.strides, 1);
  const std::vector<int> dilations = spatial(p.dilations, 1);

  RETURN_IF_ERROR(api.Check(api.CreateTensorDescriptor(&e->x), "cudnnCreateTensorDescriptor"));
  RETURN_IF_ERROR(api.Check(api.CreateTensorDescriptor(&e->y), "cudnnCreateTensorDescriptor"));
  RETURN_IF_ERROR(api.Check(api.CreateFilterDescriptor(&e->w), "cudnnCreateFilterDescriptor"));
  RETURN_IF_ERROR(api.Check(api.CreateConvolutionDescriptor(&e->conv),
                            "cudnnCreateConvolutionDescriptor"));
  const std::vector<int> xs = p.channels_last ? ChannelsLastStrides(xdims)
                                              : PackedStrides(xdims);
  const std::vector<int> ys = p.channels_last ? ChannelsLastStrides(ydims)
                                              : PackedStrides(ydims);
  RETURN_IF_ERROR(api.Check(
      api.SetTensorNdDescriptor(e->x, data, nd + 2, xdims.data(), xs.data()),
      "cudnnSetTensorNdDescriptor (input)"));
  RETURN_IF_ERROR(api.Check(
      api.SetTensorNdDescriptor(e->y, data, nd + 2, ydims.data(), ys.data()),
      "cudnnSetTensorNdDescriptor (output)"));
  // The filter's dims are [O, C/g, kernel...] either way; NHWC says they
  // lie as [O, kernel..., C/g] (KRSC).
  RETURN_IF_ERROR(api.Check(api.SetFilterNdDescriptor(e->w, data,
                                                      p.channels_last
                                                          ? CUDNN_TENSOR_NHWC
                                                          : CUDNN_TENSOR_NCHW,
                                                      nd + 2, wdims.data()),
                            "cudnnSetFilterNdDescriptor"));
  RETURN_IF_ERROR(api.Check(
      api.SetConvolutionNdDescriptor(e->conv, nd, pads.data(), strides.data(),
                                     dilations.data(), CUDNN_CROSS_CORRELATION,
                                     compute),
      "cudnnSetConvolutionNdDescriptor"));
  RETURN_IF_ERROR(api.Check(
      api.SetConvolutionGroupCount(e->conv, static_cast<int>(p.group)),
      "cudnnSetConvolutionGroupCount"));
  RETURN_IF_ERROR(api.Check(api.SetConvolutionMathType(e->conv, math),
                            "cudnnSetConvolutionMathType"));
  e->requested_math = math;
  // cuDNN's own idea of the output must be ours (CudnnCanExpress checked
  // the formula; this catches a descriptor mistake before any launch).
  std::vector<int> out(nd + 2);
  RETURN_IF_ERROR(api.Check(api.GetConvolutionNdForwardOutputDim(
                                e->conv, e->x, e->w, nd + 2, out.data()),
                            "cudnnGetConvolutionNdForwardOutputDim"));
  if (out != ydims) {
    return absl::InternalError(absl::StrCat(
        "cuDNN computes a forward output of [", absl::StrJoin(out, ","),
        "], sluice [", absl::StrJoin(ydims, ","), "]"));
  }
  return absl::OkStatus();
}

template <typename Perf>
Candidate ToCandidate(const Perf& perf) {
  Candidate c;
  c.algo = static_cast<int>(perf.algo);
  c.memory = perf.memory;
  c.time_ms = perf.time;
  c.math = perf.mathType;
  return c;
}

// The algorithms cuDNN's heuristics offer (no GPU work), best first.
absl::StatusOr<std::vector<Candidate>> Heuristic(const CudnnConvState& st,
                                                 const Entry& e,
                                                 bool transpose) {
  const CudnnApi& api = *st.api();
  std::vector<Candidate> out;
  int count = 0, returned = 0;
  if (!transpose) {
    RETURN_IF_ERROR(api.Check(api.GetConvolutionForwardAlgorithmMaxCount(st.handle(), &count),
                              "cudnnGetConvolutionForwardAlgorithmMaxCount"));
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(std::max(count, 1));
    RETURN_IF_ERROR(api.Check(
        api.GetConvolutionForwardAlgorithm_v7(st.handle(), e.x, e.w, e.conv, e.y,
                                              count, &returned, perf.data()),
        "cudnnGetConvolutionForwardAlgorithm_v7"));
    for (int i = 0; i < returned; ++i) {
      if (perf[i].status == CUDNN_STATUS_SUCCESS) out.push_back(ToCandidate(perf[i]));
    }
  } else {
    RETURN_IF_ERROR(api.Check(
        api.GetConvolutionBackwardDataAlgorithmMaxCount(st.handle(), &count),
        "cudnnGetConvolutionBackwardDataAlgorithmMaxCount"));
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(std::max(count, 1));
    RETURN_IF_ERROR(api.Check(
        api.GetConvolutionBackwardDataAlgorithm_v7(st.handle(), e.w, e.y, e.conv, e.x,
                                                   count, &returned, perf.data()),
        "cudnnGetConvolutionBackwardDataAlgorithm_v7"));
    for (int i = 0; i < returned; ++i) {
      if (perf[i].status == CUDNN_STATUS_SUCCESS) out.push_back(ToCandidate(perf[i]));
    }
  }
  for (Candidate& c : out) c.time_ms = -1;
  return out;
}

// A workspace of up to `want` bytes from the device's arena: halves what it
// asks for while the memory limit refuses, down to none. Sets *bytes to what
// it got.
absl::StatusOr<Tensor> LargestWorkspace(OpKernelContext* ctx, int64_t want,
                                        int64_t* bytes) {
  for (int64_t n = want; n >= kMinTryWorkspace; n /= 2) {
    absl::StatusOr<Tensor> t = ctx->allocate_temp(DT_UINT8, Shape({n}));
    if (t.ok()) {
      *bytes = n;
      return t;
    }
    if (!absl::IsResourceExhausted(t.status())) return t.status();
  }
  *bytes = 0;
  return Tensor();
}

// Measures every algorithm (cudnnFind*AlgorithmEx: runs them on x, w and
// y) with the largest workspace the limit allows, up to what the heuristics
// say the hungriest one needs.
absl::Status Measure(OpKernelContext* ctx, GpuDevice* gpu,
                     const CudnnConvState& st, const CudnnConvProblem& p,
                     const void* x, const void* w, void* y, Entry* e) {
  const CudnnApi& api = *st.api();
  ASSIGN_OR_RETURN(std::vector<Candidate> offered, Heuristic(st, *e, p.transpose));
  size_t hungriest = 0;
  for (const Candidate& c : offered) hungriest = std::max(hungriest, c.memory);
  const int64_t cap = std::min<int64_t>(kMaxWorkspaceBytes, gpu->memory_limit() / 8);
  int64_t ws_bytes = 0;
  ASSIGN_OR_RETURN(
      Tensor ws,
      LargestWorkspace(ctx,
                       std::min<int64_t>(cap, std::max<int64_t>(
                                                  kMinFindWorkspace,
                                                  static_cast<int64_t>(hungriest))),
                       &ws_bytes));
  void* ws_ptr = ws_bytes > 0 ? ws.raw_data() : nullptr;
  std::vector<Candidate> found;
  // Twice: the first pass launches each algorithm's kernels for the first
  // time, which loads them (CUDA and cuDNN load lazily) and makes whichever
  // ran first look fastest; the second pass's times are the ones kept.
  for (int pass = 0; pass < 2; ++pass) {
    found.clear();
    int count = 0, returned = 0;
    if (!p.transpose) {
      RETURN_IF_ERROR(api.Check(api.GetConvolutionForwardAlgorithmMaxCount(st.handle(), &count),
                                "cudnnGetConvolutionForwardAlgorithmMaxCount"));
      std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(std::max(count, 1));
      RETURN_IF_ERROR(api.Check(
          api.FindConvolutionForwardAlgorithmEx(st.handle(), e->x, x, e->w, w, e->conv,
                                                e->y, y, count, &returned, perf.data(),
                                                ws_ptr, static_cast<size_t>(ws_bytes)),
          "cudnnFindConvolutionForwardAlgorithmEx"));
      for (int i = 0; i < returned; ++i) {
        if (perf[i].status == CUDNN_STATUS_SUCCESS) found.push_back(ToCandidate(perf[i]));
      }
    } else {
      RETURN_IF_ERROR(api.Check(
          api.GetConvolutionBackwardDataAlgorithmMaxCount(st.handle(), &count),
          "cudnnGetConvolutionBackwardDataAlgorithmMaxCount"));
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(std::max(count, 1));
      // dy is ConvTranspose's x, dx its y.
      RETURN_IF_ERROR(api.Check(
          api.FindConvolutionBackwardDataAlgorithmEx(st.handle(), e->w, w, e->y, x,
                                                     e->conv, e->x, y, count, &returned,
                                                     perf.data(), ws_ptr,
                                                     static_cast<size_t>(ws_bytes)),
          "cudnnFindConvolutionBackwardDataAlgorithmEx"));
      for (int i = 0; i < returned; ++i) {
        if (perf[i].status == CUDNN_STATUS_SUCCESS) found.push_back(ToCandidate(perf[i]));
      }
    }
  }
  e->candidates.clear();
  for (const Candidate& c : found) {
    if (MathAllowed(e->requested_math, c.math) &&
        c.memory <= static_cast<size_t>(ws_bytes)) {
      e->candidates.push_back(c);
    }
  }
  std::stable_sort(e->candidates.begin(), e->candidates.end(),
                   [](const Candidate& a, const Candidate& b) {
                     return a.time_ms < b.time_ms;
                   });
  e->find_workspace = ws_bytes;
  e->measured = true;
  return absl::OkStatus();
}

// Fills e->candidates: measured (Measure), or while a step is being
// recorded, in the heuristics' order (e stays unmeasured).
absl::Status FindCandidates(OpKernelContext* ctx, GpuDevice* gpu,
                            const CudnnConvState& st, const CudnnConvProblem& p,
                            const void* x, const void* w, void* y, bool recording,
                            Entry* e) {
  if (!recording) return Measure(ctx, gpu, st, p, x, w, y, e);
  ASSIGN_OR_RETURN(std::vector<Candidate> offered, Heuristic(st, *e, p.transpose));
  e->candidates.clear();
  for (const Candidate& c : offered) {
    if (MathAllowed(e->requested_math, c.math)) e->candidates.push_back(c);
  }
  return absl::OkStatus();
}

// The fused epilogue's descriptors (float32 bias [1, O, 1...] and Relu,
// NaN propagated as the CPU kernel does), made once per entry.
absl::Status EnsureEpilogueDescriptors(const CudnnApi& api,
                                       const CudnnConvProblem& p, Entry* e) {
  if (e->bias == nullptr) {
    const int rank = static_cast<int>(p.image.size()) + 2;
    std::vector<int> dims(rank, 1), strides(rank, 1);
    dims[1] = static_cast<int>(p.out_channels);
    strides[0] = dims[1];
    RETURN_IF_ERROR(api.Check(api.CreateTensorDescriptor(&e->bias),
                              "cudnnCreateTensorDescriptor"));
    RETURN_IF_ERROR(api.Check(
        api.SetTensorNdDescriptor(e->bias, CUDNN_DATA_FLOAT, rank, dims.data(),
                                  strides.data()),
        "cudnnSetTensorNdDescriptor (bias)"));
  }
  if (e->relu == nullptr) {
    RETURN_IF_ERROR(api.Check(api.CreateActivationDescriptor(&e->relu),
                              "cudnnCreateActivationDescriptor"));
    RETURN_IF_ERROR(api.Check(
        api.SetActivationDescriptor(e->relu, CUDNN_ACTIVATION_RELU,
                                    CUDNN_PROPAGATE_NAN, 0.0),
        "cudnnSetActivationDescriptor"));
  }
  return absl::OkStatus();
}

// Runs one algorithm, with the epilogue when `ep` is given (float32
// forward only). UNIMPLEMENTED when cuDNN refuses it.
absl::Status RunOne(const CudnnConvState& st, const CudnnConvProblem& p,
                    const Entry& e, const Candidate& c, const void* x,
                    const void* w, void* y, void* ws, size_t ws_bytes,
                    const CudnnEpilogue* ep = nullptr) {
  const CudnnApi& api = *st.api();
  RETURN_IF_ERROR(api.Check(api.SetConvolutionMathType(
                                e.conv, e.requested_math == CUDNN_FMA_MATH
                                            ? CUDNN_FMA_MATH
                                            : c.math),
                            "cudnnSetConvolutionMathType"));
  const double one_d = 1.0, zero_d = 0.0;
  const float one_f = 1.0f, zero_f = 0.0f;
  const bool dbl = p.dtype == DT_DOUBLE;
  const void* alpha = dbl ? static_cast<const void*>(&one_d) : &one_f;
  const void* beta = dbl ? static_cast<const void*>(&zero_d) : &zero_f;
  if (ep != nullptr) {
    // y = relu(conv(x) + alpha2 * z + bias); z is y itself (alpha2 0)
    // when there is no side input.
    const float alpha2 = ep->side != nullptr ? 1.0f : 0.0f;
    return api.Check(
        api.ConvolutionBiasActivationForward(
            st.handle(), &one_f, e.x, x, e.w, w, e.conv,
            static_cast<cudnnConvolutionFwdAlgo_t>(c.algo), ws, ws_bytes,
            &alpha2, e.y, ep->side != nullptr ? ep->side : y, e.bias, ep->bias,
            e.relu, e.y, y),
        "cudnnConvolutionBiasActivationForward");
  }
  if (!p.transpose) {
    return api.Check(
        api.ConvolutionForward(st.handle(), alpha, e.x, x, e.w, w, e.conv,
                               static_cast<cudnnConvolutionFwdAlgo_t>(c.algo), ws,
                               ws_bytes, beta, e.y, y),
        "cudnnConvolutionForward");
  }
  return api.Check(
      api.ConvolutionBackwardData(st.handle(), alpha, e.w, w, e.y, x, e.conv,
                                  static_cast<cudnnConvolutionBwdDataAlgo_t>(c.algo),
                                  ws, ws_bytes, beta, e.x, y),
      "cudnnConvolutionBackwardData");
}

// Milliseconds `run` takes on `stream`: one untimed call first (cuDNN and
// CUDA load kernels lazily, on their first launch), then the mean of three.
// Synchronises with the stream: never while a step is being recorded.
absl::StatusOr<float> TimeOnStream(cudaStream_t stream,
                                   const std::function<absl::Status()>& run) {
  constexpr int kTimedRuns = 3;
  RETURN_IF_ERROR(run());
  cudaEvent_t start = nullptr, stop = nullptr;
  RETURN_IF_CUDA_ERROR(cudaEventCreate(&start), "cudaEventCreate");
  absl::Status s = CudaStatus(cudaEventCreate(&stop), "cudaEventCreate");
  float ms = 0;
  if (s.ok()) s = CudaStatus(cudaEventRecord(start, stream), "cudaEventRecord");
  for (int i = 0; s.ok() && i < kTimedRuns; ++i) s = run();
  if (s.ok()) s = CudaStatus(cudaEventRecord(stop, stream), "cudaEventRecord");
  if (s.ok()) s = CudaStatus(cudaEventSynchronize(stop), "cudaEventSynchronize");
  if (s.ok()) s = CudaStatus(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  cudaEventDestroy(start);
  if (stop != nullptr) cudaEventDestroy(stop);
  RETURN_IF_ERROR(s);
  return ms / kTimedRuns;
}

// Makes e->graph on first use; false (with e->graph_refused) where the
// graph API has no usable plan for the problem.
bool MakeGraph(const CudnnConvState& st, const CudnnConvProblem& p, bool allow_tf32,
               Entry* e) {
  constexpr int kGraphPlans = 6;
  if (e->graph != nullptr) return true;
  if (!e->graph_refused.empty()) return false;
  absl::StatusOr<std::unique_ptr<CudnnGraphConv>> g =
      CudnnGraphConv::Create(*st.api(), st.handle(), p, allow_tf32, kGraphPlans);
  if (!g.ok()) {
    e->graph_refused = std::string(g.status().message());
    return false;
  }
  e->graph = *std::move(g);
  return true;
}

// Time of plan `i` of `g` (then `epilogue`), with its workspace from ctx.
absl::StatusOr<float> TimeGraphPlan(OpKernelContext* ctx, cudaStream_t stream,
                                    const CudnnGraphConv& g, int i, const void* x,
                                    const void* w, void* y,
                                    const std::function<absl::Status()>& epilogue) {
  Tensor ws;
  if (g.workspace_bytes(i) > 0) {
    ASSIGN_OR_RETURN(ws, ctx->allocate_temp(DT_UINT8, Shape({g.workspace_bytes(i)})));
  }
  void* ws_data = g.workspace_bytes(i) > 0 ? ws.raw_data() : nullptr;
  return TimeOnStream(stream, [&]() -> absl::Status {
    RETURN_IF_ERROR(g.Run(i, x, w, y, ws_data));
    return epilogue();
  });
}

// Decides once per problem how it runs (CudnnPathPolicy::kMeasure): times
// the fastest plain cuDNN call (followed by sluice's epilogue kernel where
// there is an epilogue), with `try_fused` cuDNN's fused call for the
// fastest few algorithms (it runs other kernels than the plain call for the
// same algorithm, sometimes much slower ones), and with `try_gemm` the 1x1
// convolution as a cuBLAS GEMM (then the epilogue kernel). All write y,
// which the step then writes for real. Sets e->fused_algo or
// e->fused_refused (with try_fused) and e->use_gemm. REQUIRES: e measured,
// not recording.
absl::Status ChoosePath(OpKernelContext* ctx, GpuDevice* gpu,
                        const CudnnConvState& st, const CudnnConvProblem& p,
                        const void* x, const void* w, void* y,
                        const CudnnEpilogue* ep, bool try_fused, bool try_gemm,
                        bool try_graph, Entry* e) {
  constexpr size_t kFusedTries = 4;
  e->path_measured = true;
  cudaStream_t stream = static_cast<cudaStream_t>(gpu->compute_stream());
  int64_t spatial = 1;
  for (int64_t d : p.positions) spatial *= d;
  auto epilogue = [&]() -> absl::Status {
    if (ep == nullptr) return absl::OkStatus();
    // NHWC: every element is its own "plane" of one, channel innermost.
    if (p.channels_last) {
      return LaunchBiasActivation(ToGpuDtype(p.dtype), y, ep->bias, ep->side,
                                  p.batch * spatial * p.out_channels,
                                  p.out_channels, 1, ep->relu, stream);
    }
    return LaunchBiasActivation(ToGpuDtype(p.dtype), y, ep->bias, ep->side,
                                p.batch * p.out_channels, p.out_channels,
                                spatial, ep->relu, stream);
  };
  float best_fused = -1, plain = -1, gemm = -1;
  for (size_t i = 0; i < e->candidates.size(); ++i) {
    const Candidate& c = e->candidates[i];
    Tensor ws;
    if (c.memory > 0) {
      absl::StatusOr<Tensor> t =
          ctx->allocate_temp(DT_UINT8, Shape({static_cast<int64_t>(c.memory)}));
      if (!t.ok()) continue;
      ws = *std::move(t);
    }
    void* ws_data = c.memory > 0 ? ws.raw_data() : nullptr;
    if (plain < 0) {  // the fastest plain algorithm that runs
      absl::StatusOr<float> t = TimeOnStream(stream, [&]() -> absl::Status {
        RETURN_IF_ERROR(RunOne(st, p, *e, c, x, w, y, ws_data, c.memory));
        return epilogue();
      });
      if (t.ok()) plain = *t;
    }
    if (!try_fused || i >= kFusedTries) {
      if (plain >= 0) break;
      continue;
    }
    absl::StatusOr<float> t = TimeOnStream(stream, [&]() {
      return RunOne(st, p, *e, c, x, w, y, ws_data, c.memory, ep);
    });
    if (!t.ok()) continue;  // refused for this algorithm
    if (best_fused < 0 || *t < best_fused) {
      best_fused = *t;
      e->fused_algo = c.algo;
    }
  }
  if (try_gemm) {
    absl::StatusOr<float> t = TimeOnStream(stream, [&]() -> absl::Status {
      RETURN_IF_ERROR(RunConvAsGemm(gpu, p, x, w, y));
      return epilogue();
    });
    if (t.ok()) gemm = *t;
  }
  float graph = -1;
  std::string graph_times;  // per plan, for path_timings
  if (try_graph && MakeGraph(st, p, gpu->allow_tf32(), e)) {
    for (int i = 0; i < e->graph->num_plans(); ++i) {
      absl::StatusOr<float> t = TimeGraphPlan(ctx, stream, *e->graph, i, x, w, y, epilogue);
      absl::StrAppend(&graph_times, graph_times.empty() ? "" : "; ", "engine ",
                      e->graph->engine(i), " ",
                      t.ok() ? absl::StrCat(*t, " ms, ", e->graph->workspace_bytes(i),
                                            " B workspace")
                             : std::string(t.status().message()));
      if (t.ok() && (graph < 0 || *t < graph)) {
        graph = *t;
        e->graph_plan = i;
      }
    }
    if (e->graph_plan < 0) e->graph_refused = "no plan of cuDNN's graph API ran";
  }
  float cudnn = plain;
  if (try_fused) {
    if (best_fused < 0) {
      e->fused_algo = -1;
      e->fused_refused = "cuDNN refused the fused call for every algorithm tried";
    } else if (plain >= 0 && plain < best_fused) {
      e->fused_refused = absl::StrCat(
          "the plain call and sluice's epilogue kernel are faster (", plain,
          " ms against ", best_fused, " ms fused with algorithm ", e->fused_algo, ")");
      e->fused_algo = -1;
    } else {
      cudnn = best_fused;
    }
  }
  e->use_gemm = gemm >= 0 && (cudnn < 0 || gemm < cudnn);
  const float legacy_best = e->use_gemm ? gemm : cudnn;
  if (graph >= 0 && legacy_best >= 0 && legacy_best <= graph) {
    e->graph_refused = absl::StrCat("the legacy calls are faster (", legacy_best,
                                    " ms against ", graph, " ms)");
    e->graph_plan = -1;
  }
  if (e->graph_plan >= 0) e->use_gemm = false;
  auto ms = [](float t) { return t < 0 ? std::string("-") : absl::StrCat(t, " ms"); };
  e->path_timings = absl::StrCat(
      "plain ", ms(plain), ", fused ", ms(best_fused), ", gemm ", ms(gemm), ", graph ",
      ms(graph), graph_times.empty() ? "" : absl::StrCat(" (", graph_times, ")"),
      ": ", e->graph_plan >= 0 ? "graph" : e->use_gemm ? "gemm" : "cudnn");
  return absl::OkStatus();
}

std::string CacheKey(const CudnnConvProblem& p, cudnnMathType_t math) {
  return absl::StrCat(DataTypeName(p.dtype), p.transpose ? " transpose" : "",
                      p.channels_last ? " NHWC" : " NC", p.image.size(),
                      "d n=", p.batch, " c=", p.in_channels, "->", p.out_channels, " g=", p.group, " image=", Join(p.image),
                      " pos=", Join(p.positions), " k=", Join(p.kernel),
                      " s=", Join(p.strides), " d=", Join(p.dilations),
                      " pad=", Join(p.pad_begin), " math=", static_cast<int>(math));
}

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

// Counts a run of `e` on `algo` (or kGemmAlgo, kGraphAlgo) with `workspace`
// bytes; `path_runs` (when given) is the path's own counter.
void CountRun(Entry* e, int algo, int64_t workspace, int64_t* path_runs) {
  e->last_algo = algo;
  e->last_workspace = workspace;
  if (path_runs != nullptr) ++*path_runs;
  ++e->runs;
}

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

// The plan of cuDNN's graph API that measuring kept (kGraph: its first).
class GraphPath final : public ConvPath {
 public:
  bool CanImplement(const ConvCall&, CudnnPathPolicy policy,
                    const Entry& e) const override {
    return e.graph_plan >= 0 && (policy == CudnnPathPolicy::kMeasure ||
                                 policy == CudnnPathPolicy::kGraph);
  }
  int64_t WorkspaceBytes(const Entry& e) const override {
    return e.graph->workspace_bytes(e.graph_plan);
  }
  // False (the legacy calls run) when its workspace does not fit now or the
  // plan refuses the tensors (misaligned).
  absl::StatusOr<bool> Run(const ConvCall& call, Entry* e, bool*,
                           std::string*) const override {
    const int64_t ws_bytes = WorkspaceBytes(*e);
    Tensor ws;
    if (ws_bytes > 0) {
      absl::StatusOr<Tensor> t = call.ctx->allocate_temp(DT_UINT8, Shape({ws_bytes}));
      if (absl::IsResourceExhausted(t.status())) return false;
      RETURN_IF_ERROR(t.status());
      ws = *std::move(t);
    }
    absl::Status s = e->graph->Run(e->graph_plan, call.x, call.w, call.y,
                                   ws_bytes > 0 ? ws.raw_data() : nullptr);
    if (absl::IsFailedPrecondition(s)) return false;
    RETURN_IF_ERROR(s);
    CountRun(e, kGraphAlgo, ws_bytes, &e->graph_runs);
    return true;  // the caller applies the epilogue
  }
};

// A 1x1 convolution as one cuBLAS GEMM per batch (conv_gemm.h).
class GemmPath final : public ConvPath {
 public:
  bool CanImplement(const ConvCall& call, CudnnPathPolicy policy,
                    const Entry& e) const override {
    return ConvIsGemm(*call.p) &&
           (policy == CudnnPathPolicy::kGemm ||
            (policy == CudnnPathPolicy::kMeasure && e.use_gemm));
  }
  int64_t WorkspaceBytes(const Entry&) const override { return 0; }
  absl::StatusOr<bool> Run(const ConvCall& call, Entry* e, bool*,
                           std::string*) const override {
    RETURN_IF_ERROR(RunConvAsGemm(call.gpu, *call.p, call.x, call.w, call.y));
    CountRun(e, kGemmAlgo, 0, &e->gemm_runs);
    return true;  // the caller applies the epilogue
  }
};

// cuDNN's legacy calls: the fastest measured algorithm whose workspace the
// memory limit allows now, with the fused call first where `call.fuse`
// (its timed algorithm first, when one was timed).
class LegacyPath final : public ConvPath {
 public:
  bool CanImplement(const ConvCall&, CudnnPathPolicy,
                    const Entry& e) const override {
    return !e.candidates.empty();
  }
  int64_t WorkspaceBytes(const Entry& e) const override {
    return static_cast<int64_t>(e.candidates.front().memory);
  }
  absl::StatusOr<bool> Run(const ConvCall& call, Entry* e, bool* epilogue_done,
                           std::string* why_not) const override {
    const CudnnConvProblem& p = *call.p;
    bool fuse = call.fuse;
    std::vector<const Candidate*> order;
    for (const Candidate& c : e->candidates) order.push_back(&c);
    if (fuse && e->fused_algo >= 0) {
      std::stable_partition(order.begin(), order.end(), [&](const Candidate* c) {
        return c->algo == e->fused_algo;
      });
    }
    absl::Status last_error;
    for (const Candidate* candidate : order) {
      const Candidate& c = *candidate;
      Tensor ws;
      if (c.memory > 0) {
        absl::StatusOr<Tensor> t = call.ctx->allocate_temp(
            DT_UINT8, Shape({static_cast<int64_t>(c.memory)}));
        if (absl::IsResourceExhausted(t.status())) continue;
        RETURN_IF_ERROR(t.status());
        ws = *std::move(t);
      }
      void* ws_data = c.memory > 0 ? ws.raw_data() : nullptr;
      if (fuse) {
        absl::Status f = RunOne(*call.st, p, *e, c, call.x, call.w, call.y, ws_data,
                                c.memory, call.epilogue);
        if (f.ok()) {
          *epilogue_done = true;
          CountRun(e, c.algo, static_cast<int64_t>(c.memory), &e->fused_runs);
          return true;
        }
        // Refused (NOT_SUPPORTED for this algorithm or problem): the plain
        // call below, and the caller's epilogue, from now on.
        e->fused_refused = std::string(f.message());
        fuse = false;
      }
      absl::Status s =
          RunOne(*call.st, p, *e, c, call.x, call.w, call.y, ws_data, c.memory);
      if (!s.ok()) {  // refused at run time (NOT_SUPPORTED, BAD_PARAM): next
        last_error = s;
        continue;
      }
      CountRun(e, c.algo, static_cast<int64_t>(c.memory), nullptr);
      return true;
    }
    const std::string& key = *call.key;
    if (!last_error.ok()) {
      *why_not = absl::StrCat("cuDNN refused every algorithm for ", key,
                              "; the last: ", last_error.message());
    } else {
      *why_not = absl::StrCat("no cuDNN algorithm for ", key,
                              " fits: the fastest needs ", WorkspaceBytes(*e),
                              " bytes of workspace and ", call.gpu->name(),
                              " has no room for any");
    }
    return false;
  }
};

}  // namespace

absl::Status CudnnCanExpress(const CudnnConvProblem& p) {
  RETURN_IF_ERROR(DataTypeFor(p.dtype).status());
  const size_t n = p.image.size();
  if (n < 1 || n > 3) {
    return absl::UnimplementedError(
        absl::StrCat(n, " spatial dims: cuDNN convolutions take 1 to 3"));
  }
  if (p.positions.size() != n || p.kernel.size() != n || p.strides.size() != n ||
      p.dilations.size() != n || p.pad_begin.size() != n) {
    return absl::InvalidArgumentError("CudnnConvProblem: window dims disagree");
  }
  if (p.channels_last && (p.transpose || n != 2)) {
    return absl::UnimplementedError(
        "channels-last (NHWC) convolutions on cuDNN here are forward 2-D ones");
  }
  if (p.group < 1 || p.in_channels % p.group != 0 || p.out_channels % p.group != 0) {
    return absl::InvalidArgumentError("CudnnConvProblem: channels and group disagree");
  }
  int64_t image_elems = p.batch * (p.transpose ? p.out_channels : p.in_channels);
  int64_t pos_elems = p.batch * (p.transpose ? p.in_channels : p.out_channels);
  int64_t filter_elems = p.in_channels * p.out_channels / p.group;
  for (size_t d = 0; d < n; ++d) {
    if (p.image[d] <= 0 || p.positions[d] <= 0 || p.kernel[d] <= 0) {
      return absl::UnimplementedError("an empty tensor (nothing for cuDNN to do)");
    }
    if (p.pad_begin[d] < 0) {
      return absl::UnimplementedError(
          absl::StrCat("negative pad ", p.pad_begin[d], ": cuDNN pads are >= 0"));
    }
    if (CudnnOutSize(p.image[d], p.pad_begin[d], p.kernel[d], p.strides[d],
                     p.dilations[d]) != p.positions[d]) {
      return absl::UnimplementedError(absl::StrCat(
          "asymmetric padding along spatial dim ", d,
          ": cuDNN pads both ends by ", p.pad_begin[d], ", which does not give ",
          p.positions[d], " positions over ", p.image[d]));
    }
    image_elems *= p.image[d];
    pos_elems *= p.positions[d];
    filter_elems *= p.kernel[d];
  }
  if (p.batch <= 0 || p.in_channels <= 0 || p.out_channels <= 0) {
    return absl::UnimplementedError("an empty tensor (nothing for cuDNN to do)");
  }
  if (image_elems > kInt32Max || pos_elems > kInt32Max || filter_elems > kInt32Max) {
    return absl::UnimplementedError(
        "a tensor of 2^31 or more elements: cuDNN's legacy API indexes with int");
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> RunCudnnConv(OpKernelContext* ctx, GpuDevice* gpu,
                                  const CudnnConvProblem& p, const void* x,
                                  const void* w, void* y, std::string* why_not,
                                  const CudnnEpilogue* epilogue,
                                  bool* epilogue_done) {
  if (epilogue_done != nullptr) *epilogue_done = false;
  auto refuse = [&](std::string why) {
    if (why_not != nullptr) *why_not = std::move(why);
    return false;
  };
  if (!gpu->use_cudnn()) return refuse("the config turns cuDNN off (use_cudnn)");
  if (absl::Status s = CudnnCanExpress(p); !s.ok()) {
    return refuse(std::string(s.message()));
  }
  absl::StatusOr<const CudnnApi*> api = GetCudnn();
  if (!api.ok()) return refuse(std::string(api.status().message()));
  absl::StatusOr<CudnnConvState*> state = StateFor(gpu);
  if (!state.ok()) {  // cudnnCreate failed: our own kernels, this time
    return refuse(std::string(state.status().message()));
  }
  CudnnConvState* st = *state;
  const cudnnMathType_t math = MathFor(p.dtype, gpu->allow_tf32());
  const std::string key = CacheKey(p, math);

  absl::MutexLock lock(&st->mu());
  std::unique_ptr<Entry>& slot = st->cache()[key];
  if (slot == nullptr) {
    auto e = std::make_unique<Entry>(*api);
    // A problem cuDNN's descriptors refuse (BAD_PARAM, NOT_SUPPORTED, an
    // output size that disagrees) runs on our own kernels from now on; the
    // tests check that cuDNN did run where it should.
    absl::Status s = MakeDescriptors(p, math, e.get());
    if (!s.ok()) e->unsupported = std::string(s.message());
    slot = std::move(e);
  }
  Entry* e = slot.get();
  if (!e->unsupported.empty()) return refuse(e->unsupported);
  // A step being recorded as a CUDA graph must not synchronise: measuring
  // waits for the GPU, so while recording the heuristics' order is used
  // and the next ordinary step measures (normally the first step, which
  // runs before any recording, has measured already).
  const bool recording = CapturingOnThisThread(gpu);
  if (!e->measured) {
    absl::Status s = FindCandidates(ctx, gpu, *st, p, x, w, y, recording, e);
    if (absl::IsUnimplemented(s)) {
      e->unsupported = std::string(s.message());
      return refuse(e->unsupported);
    }
    // Measuring failed otherwise (out of memory inside cuDNN, say): our own
    // kernel this time, and the next call measures again.
    if (!s.ok()) return refuse(std::string(s.message()));
  }
  if (e->candidates.empty()) {
    return refuse(absl::StrCat("cuDNN offers no algorithm for ", key,
                               e->find_workspace > 0 || !e->measured
                                   ? ""
                                   : " within the memory left for a workspace"));
  }
  // The epilogue in the same call: float32 forward convolutions with Relu
  // (cuDNN's legacy fused call supports every algorithm with Relu, only
  // one without), unless cuDNN refused it for this problem before.
  bool fuse = epilogue != nullptr && epilogue_done != nullptr &&
              epilogue->relu && !p.transpose && p.dtype == DT_FLOAT &&
              e->fused_refused.empty();
  if (fuse) {
    absl::Status s = EnsureEpilogueDescriptors(**api, p, e);
    if (!s.ok()) {
      e->fused_refused = std::string(s.message());
      fuse = false;
    }
  }
  // Which paths may run: measured once per problem, or the device's policy.
  const CudnnPathPolicy policy = st->options().policy;
  const bool gemm_able = ConvIsGemm(p);
  const bool graph_able = !p.transpose && p.image.size() >= 2 &&
                          p.dtype != DT_DOUBLE && e->graph_refused.empty();
  if (policy == CudnnPathPolicy::kMeasure && !e->path_measured && e->measured &&
      !recording && (fuse || gemm_able || graph_able)) {
    RETURN_IF_ERROR(ChoosePath(ctx, gpu, *st, p, x, w, y, epilogue, fuse,
                               gemm_able, graph_able, e));
    fuse = fuse && e->fused_refused.empty();
  }
  if (policy == CudnnPathPolicy::kGraph && graph_able && e->graph_plan < 0 &&
      MakeGraph(*st, p, gpu->allow_tf32(), e)) {
    e->graph_plan = 0;
  }
  const GraphPath graph_path;
  const GemmPath gemm_path;
  const LegacyPath legacy_path;
  const ConvPath* const paths[] = {&graph_path, &gemm_path, &legacy_path};
  const ConvCall call{ctx, gpu, st, &p, x, w, y, epilogue, fuse, &key};
  std::string why;
  for (const ConvPath* path : paths) {
    if (!path->CanImplement(call, policy, *e)) continue;
    ASSIGN_OR_RETURN(bool ran, path->Run(call, e, epilogue_done, &why));
    if (ran) return true;
  }
  return refuse(why);  // the legacy path, last, says why
}

absl::Status SetCudnnPathPolicyForTesting(GpuDevice* gpu, CudnnPathPolicy policy) {
  if (!gpu->use_cudnn()) {
    return absl::FailedPreconditionError(absl::StrCat(
        gpu->name(), " does not use cuDNN (use_cudnn is off): no path to choose"));
  }
  ASSIGN_OR_RETURN(CudnnConvState * st, StateFor(gpu));
  absl::MutexLock lock(&st->mu());
  st->options().policy = policy;
  return absl::OkStatus();
}

std::vector<CudnnConvCacheEntry> CudnnConvCache(GpuDevice* gpu) {
  std::vector<CudnnConvCacheEntry> out;
  if (!GetCudnn().ok()) return out;
  absl::StatusOr<CudnnConvState*> st = StateFor(gpu);
  if (!st.ok()) return out;
  absl::MutexLock lock(&(*st)->mu());
  for (const auto& [key, e] : (*st)->cache()) {
    CudnnConvCacheEntry c;
    c.key = key;
    for (const Candidate& a : e->candidates) {
      c.algorithms.push_back({a.algo, static_cast<int64_t>(a.memory), a.time_ms,
                              static_cast<int>(a.math)});
    }
    c.find_workspace_bytes = e->find_workspace;
    c.measured = e->measured;
    c.unsupported = e->unsupported;
    c.last_algo = e->last_algo;
    c.last_workspace_bytes = e->last_workspace;
    c.runs = e->runs;
    c.fused_runs = e->fused_runs;
    c.fused_refused = e->fused_refused;
    c.path_measured = e->path_measured;
    c.path_timings = e->path_timings;
    c.gemm_runs = e->gemm_runs;
    c.graph_runs = e->graph_runs;
    c.graph_engine = e->graph_plan >= 0 ? e->graph->engine(e->graph_plan) : -1;
    c.graph_refused = e->graph_refused;
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace sluice::cuda
