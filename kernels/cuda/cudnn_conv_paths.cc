// The paths of cuDNN convolutions (cudnn_conv_paths.h): cuDNN's legacy
// calls (plain or with the epilogue fused), cuDNN's graph API, a cuBLAS
// GEMM, and the timing that picks one per problem.
#include "kernels/cuda/cudnn_conv_paths.h"

#include <algorithm>
#include <functional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "cuda_runtime_api.h"
#include "device/cuda/cuda_status.h"
#include "kernels/cuda/bias_activation.h"
#include "kernels/cuda/conv_gemm.h"
#include "kernels/cuda/cuda_kernel_util.h"

namespace sluice::cuda::cudnn_conv_internal {
namespace {

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

// Counts a run of `e` on `algo` (or kGemmAlgo, kGraphAlgo) with `workspace`
// bytes; `path_runs` (when given) is the path's own counter.
void CountRun(Entry* e, int algo, int64_t workspace, int64_t* path_runs) {
  e->last_algo = algo;
  e->last_workspace = workspace;
  if (path_runs != nullptr) ++*path_runs;
  ++e->runs;
}

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

absl::Span<const ConvPath* const> ConvPaths() {
  static const GraphPath* const kGraph = new GraphPath();
  static const GemmPath* const kGemm = new GemmPath();
  static const LegacyPath* const kLegacy = new LegacyPath();
  static const ConvPath* const kPaths[] = {kGraph, kGemm, kLegacy};
  return kPaths;
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

}  // namespace sluice::cuda::cudnn_conv_internal
