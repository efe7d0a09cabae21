// Conv and ConvTranspose through cuDNN's legacy convolution API:
// cudnnConvolutionForward, and cudnnConvolutionBackwardData for
// ConvTranspose (the adjoint of the forward convolution whose input is
// ConvTranspose's output). Descriptors, the measured algorithm list and the
// last choice are cached per (problem, math mode) in a per-device state;
// the paths a problem may run on, and their timing, are cudnn_conv_paths.h.
#include "kernels/cuda/cudnn_conv.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "core/status_macros.h"
#include "cuda_runtime_api.h"
#include "device/cuda/cudnn_library.h"
#include "device/fault_injector.h"
#include "device/gpu_graph.h"
#include "kernels/algorithm_cache.h"
#include "kernels/cuda/cudnn_conv_paths.h"
#include "kernels/cuda/cudnn_graph_conv.h"
#include "kernels/cuda/gpu_algorithm_cache.h"
#include "kernels/cuda/library_handle_cache.h"

namespace sluice::cuda {
namespace {

using cudnn_conv_internal::Candidate;
using cudnn_conv_internal::ConvAlgorithm;
using cudnn_conv_internal::ConvAlgorithms;
using cudnn_conv_internal::ConvCall;
using cudnn_conv_internal::CudnnConvState;
using cudnn_conv_internal::EnsureEpilogueDescriptors;
using cudnn_conv_internal::Entry;
using cudnn_conv_internal::MakeGraph;
using cudnn_conv_internal::MayFuse;

constexpr char kResourceKey[] = "cudnn_conv";
constexpr char kLibrary[] = "cuDNN";  // the AlgorithmCache's library
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
  RETURN_IF_ERROR(
      InjectedFault(FaultKind::kLibrary, "cuDNN algorithm search"));
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

std::string CacheKey(const CudnnConvProblem& p, cudnnMathType_t math) {
  return absl::StrCat(DataTypeName(p.dtype), p.transpose ? " transpose" : "",
                      p.channels_last ? " NHWC" : " NC", p.image.size(),
                      "d n=", p.batch, " c=", p.in_channels, "->", p.out_channels, " g=", p.group, " image=", Join(p.image),
                      " pos=", Join(p.positions), " k=", Join(p.kernel),
                      " s=", Join(p.strides), " d=", Join(p.dilations),
                      " pad=", Join(p.pad_begin), " math=", static_cast<int>(math));
}

// After the ways of a problem were timed: where another way was kept, the
// entry says why the fused call and the graph API's plans are not used.
void ExplainChoice(const AlgorithmCache::Entry& timed, const ConvAlgorithms& algorithms,
                   const ConvCall& call) {
  if (timed.order.empty()) return;
  const std::string kept = algorithms.at(timed.order[0]).Name(call);
  const std::string why = absl::StrCat("a faster way was timed (", timed.timings, ")");
  Entry* e = call.e;
  if (MayFuse(call) && kept.rfind("fused", 0) != 0 && e->fused_refused.empty()) {
    e->fused_refused = why;
  }
  if (e->graph != nullptr && kept.rfind("graph", 0) != 0 && e->graph_refused.empty()) {
    e->graph_refused = why;
  }
}

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
  // With an epilogue, every algorithm applies it: cuDNN's fused call (where
  // MayFuse, unless cuDNN refused it for this problem before), the others
  // with sluice's epilogue kernel after.
  ConvCall call{ctx, gpu, st, &p, x, w, y,
                epilogue_done != nullptr ? epilogue : nullptr, e};
  if (MayFuse(call) && e->fused_refused.empty()) {
    absl::Status s = EnsureEpilogueDescriptors(**api, p, e);
    if (!s.ok()) e->fused_refused = std::string(s.message());
  }
  // The graph API's plans are made where they may run: timed (kMeasure,
  // outside recording) or forced (kGraph).
  const CudnnPathPolicy policy = st->options().policy;
  const bool graph_able = !p.transpose && p.image.size() >= 2 && p.dtype != DT_DOUBLE;
  if (graph_able && (policy == CudnnPathPolicy::kGraph ||
                     (policy == CudnnPathPolicy::kMeasure && e->measured && !recording))) {
    MakeGraph(*st, p, gpu->allow_tf32(), e);
  }
  ASSIGN_OR_RETURN(AlgorithmCache * cache, GpuAlgorithmCache(gpu));
  GpuAlgorithmDevice device(ctx, gpu);
  AlgorithmCache::Options options;
  options.library = kLibrary;
  options.time = policy == CudnnPathPolicy::kMeasure;
  const ConvAlgorithms algorithms(call, policy);
  ASSIGN_OR_RETURN(AlgorithmCache::Ran ran,
                   cache->Run<ConvCall>(key, algorithms.list(), call, options, &device));
  if (ran.timed_now) ExplainChoice(cache->Find(kLibrary, key), algorithms, call);
  if (ran.index < 0) {
    if (MayFuse(call) && e->fused_refused.empty() && !e->fused_error.empty()) {
      e->fused_refused = e->fused_error;
    }
    return refuse(ran.why_not);
  }
  const ConvAlgorithm& chosen = algorithms.at(ran.index);
  chosen.Count(e, ran.workspace_bytes);
  // An untimed run whose fused call cuDNN refused: the plain calls from now on.
  if (MayFuse(call) && e->fused_refused.empty() && !e->fused_error.empty() &&
      chosen.Name(call).rfind("fused", 0) != 0) {
    e->fused_refused = e->fused_error;
  }
  if (epilogue_done != nullptr) *epilogue_done = call.epilogue != nullptr;
  return true;
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
  absl::StatusOr<AlgorithmCache*> cache = GpuAlgorithmCache(gpu);
  if (!cache.ok()) return out;
  absl::MutexLock lock(&(*st)->mu());
  for (const auto& [key, e] : (*st)->cache()) {
    const AlgorithmCache::Entry timed = (*cache)->Find(kLibrary, key);
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
    c.path_measured = timed.timed;
    c.path_timings = timed.timings;
    c.gemm_runs = e->gemm_runs;
    c.graph_runs = e->graph_runs;
    c.graph_engine = e->graph_plan >= 0 ? e->graph->engine(e->graph_plan) : -1;
    c.graph_refused = e->graph_refused;
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace sluice::cuda
