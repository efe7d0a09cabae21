// The algorithms of cuDNN convolutions (cudnn_conv_paths.h): cuDNN's legacy
// calls (plain or with the epilogue fused), cuDNN's graph API's plans and a
// cuBLAS GEMM.
#include "kernels/cuda/cudnn_conv_paths.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "cuda_runtime_api.h"
#include "device/cuda/cuda_status.h"
#include "device/fault_injector.h"
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
  RETURN_IF_ERROR(InjectedFault(FaultKind::kLibrary, "cuDNN convolution"));
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

// Applies call.epilogue (where there is one) to call.y: y = act(y + bias
// (+ side)), channel innermost for NHWC.
absl::Status ApplyEpilogue(const ConvCall& call) {
  const CudnnEpilogue* ep = call.epilogue;
  if (ep == nullptr) return absl::OkStatus();
  const CudnnConvProblem& p = *call.p;
  int64_t spatial = 1;
  for (int64_t d : p.positions) spatial *= d;
  cudaStream_t stream = static_cast<cudaStream_t>(call.gpu->compute_stream());
  if (p.channels_last) {  // every element its own "plane" of one
    return LaunchBiasActivation(ToGpuDtype(p.dtype), call.y, ep->bias, ep->side,
                                p.batch * spatial * p.out_channels, p.out_channels,
                                1, ep->relu, stream);
  }
  return LaunchBiasActivation(ToGpuDtype(p.dtype), call.y, ep->bias, ep->side,
                              p.batch * p.out_channels, p.out_channels, spatial,
                              ep->relu, stream);
}

// Counts a run on `algo` (a cuDNN algorithm, kGemmAlgo or kGraphAlgo).
void CountRun(Entry* e, int algo, int64_t workspace) {
  e->last_algo = algo;
  e->last_workspace = workspace;
  ++e->runs;
}

// Plan `plan` of cuDNN's graph API, then the epilogue kernel.
class GraphPlanAlgorithm final : public ConvAlgorithm {
 public:
  explicit GraphPlanAlgorithm(int plan) : plan_(plan) {}
  std::string Name(const ConvCall& call) const override {
    return absl::StrCat("graph engine ", call.e->graph->engine(plan_));
  }
  absl::Status CanImplement(const ConvCall&) const override { return absl::OkStatus(); }
  int64_t WorkspaceBytes(const ConvCall& call) const override {
    return call.e->graph->workspace_bytes(plan_);
  }
  // FAILED_PRECONDITION (a refusal) where the plan refuses the tensors
  // (misaligned).
  absl::Status Run(const ConvCall& call, void* workspace) const override {
    RETURN_IF_ERROR(call.e->graph->Run(plan_, call.x, call.w, call.y, workspace));
    return ApplyEpilogue(call);
  }
  void Count(Entry* e, int64_t workspace) const override {
    CountRun(e, kGraphAlgo, workspace);
    ++e->graph_runs;
    e->graph_plan = plan_;
  }

 private:
  const int plan_;
};

// A 1x1 convolution as one cuBLAS GEMM per batch (conv_gemm.h), then the
// epilogue kernel.
class GemmAlgorithm final : public ConvAlgorithm {
 public:
  std::string Name(const ConvCall&) const override { return "gemm"; }
  absl::Status CanImplement(const ConvCall& call) const override {
    if (ConvIsGemm(*call.p)) return absl::OkStatus();
    return absl::UnimplementedError("not a 1x1 convolution cuBLAS can run");
  }
  int64_t WorkspaceBytes(const ConvCall&) const override { return 0; }
  absl::Status Run(const ConvCall& call, void*) const override {
    RETURN_IF_ERROR(RunConvAsGemm(call.gpu, *call.p, call.x, call.w, call.y));
    return ApplyEpilogue(call);
  }
  void Count(Entry* e, int64_t workspace) const override {
    CountRun(e, kGemmAlgo, workspace);
    ++e->gemm_runs;
  }
};

// cuDNN's legacy call with its measured algorithm `index`: plain (then the
// epilogue kernel) or, `fused`, with the epilogue in the same call
// (cudnnConvolutionBiasActivationForward). Any cuDNN failure is a refusal
// (NOT_SUPPORTED, BAD_PARAM for this algorithm at run time): the next runs.
class LegacyAlgorithm final : public ConvAlgorithm {
 public:
  LegacyAlgorithm(int index, bool fused) : index_(index), fused_(fused) {}
  std::string Name(const ConvCall& call) const override {
    return absl::StrCat(fused_ ? "fused" : "plain", " algo ",
                        call.e->candidates[index_].algo);
  }
  absl::Status CanImplement(const ConvCall& call) const override {
    if (fused_ && !call.e->fused_refused.empty()) {
      return absl::UnimplementedError(call.e->fused_refused);
    }
    return absl::OkStatus();
  }
  int64_t WorkspaceBytes(const ConvCall& call) const override {
    return static_cast<int64_t>(call.e->candidates[index_].memory);
  }
  // cudnnFind ranked the plain calls; the fused call runs other kernels
  // (sometimes much slower ones), so each is timed.
  int RankedGroup() const override { return fused_ ? -1 : 0; }
  absl::Status Run(const ConvCall& call, void* workspace) const override {
    const Candidate& c = call.e->candidates[index_];
    absl::Status s = RunOne(*call.st, *call.p, *call.e, c, call.x, call.w, call.y,
                            workspace, c.memory, fused_ ? call.epilogue : nullptr);
    if (!s.ok()) {
      if (fused_) call.e->fused_error = std::string(s.message());
      return absl::UnimplementedError(s.message());
    }
    return fused_ ? absl::OkStatus() : ApplyEpilogue(call);
  }
  void Count(Entry* e, int64_t workspace) const override {
    CountRun(e, e->candidates[index_].algo, workspace);
    if (fused_) ++e->fused_runs;
  }

 private:
  const int index_;
  const bool fused_;
};

}  // namespace

bool MayFuse(const ConvCall& call) {
  return call.epilogue != nullptr && call.epilogue->relu && !call.p->transpose &&
         call.p->dtype == DT_FLOAT;
}

ConvAlgorithms::ConvAlgorithms(const ConvCall& call, CudnnPathPolicy policy) {
  // The fused call is timed with the fastest few plain algorithms only.
  constexpr int kFusedTries = 4;
  const Entry& e = *call.e;
  const int n = static_cast<int>(e.candidates.size());
  auto add = [&](std::unique_ptr<ConvAlgorithm> a) {
    list_.push_back(a.get());
    owned_.push_back(std::move(a));
  };
  auto add_graph = [&](int plans) {
    for (int i = 0; e.graph != nullptr && i < std::min(plans, e.graph->num_plans()); ++i) {
      add(std::make_unique<GraphPlanAlgorithm>(i));
    }
  };
  if (policy == CudnnPathPolicy::kGemm && ConvIsGemm(*call.p)) {
    add(std::make_unique<GemmAlgorithm>());
  }
  if (policy == CudnnPathPolicy::kGraph) add_graph(1);
  if (MayFuse(call)) {
    const int fused = policy == CudnnPathPolicy::kMeasure ? std::min(n, kFusedTries) : n;
    for (int i = 0; i < fused; ++i) add(std::make_unique<LegacyAlgorithm>(i, true));
  }
  for (int i = 0; i < n; ++i) add(std::make_unique<LegacyAlgorithm>(i, false));
  if (policy == CudnnPathPolicy::kMeasure) {
    if (ConvIsGemm(*call.p)) add(std::make_unique<GemmAlgorithm>());
    add_graph(e.graph == nullptr ? 0 : e.graph->num_plans());
  }
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

}  // namespace sluice::cuda::cudnn_conv_internal
