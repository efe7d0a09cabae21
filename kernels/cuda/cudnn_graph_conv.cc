// CudnnGraphConv: x, w and y as backend tensors (packed NCHW strides, or
// channels-last ones for an NHWC problem, uids
// 1, 2, 3), one CONVOLUTION_FORWARD operation, its operation graph, mode A
// heuristics, and a plan per usable engine configuration. See the header.
#include "kernels/cuda/cudnn_graph_conv.h"

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace sluice::cuda {
namespace {

// cuDNN 9.19's headers mark the *_HANDLE attributes deprecated (a device
// properties descriptor may stand in); the 9.14 runtime on the GPU machines
// still wants the handle, which every cuDNN 9 accepts.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
constexpr cudnnBackendAttributeName_t kGraphHandle = CUDNN_ATTR_OPERATIONGRAPH_HANDLE;
constexpr cudnnBackendAttributeName_t kPlanHandle = CUDNN_ATTR_EXECUTION_PLAN_HANDLE;
#pragma GCC diagnostic pop

constexpr int64_t kX = 1, kW = 2, kY = 3;  // tensor uids

std::vector<int64_t> Packed(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * dims[i + 1];
  }
  return strides;
}

// Strides of [N, C, spatial...] dims lying as [N, spatial..., C]: the
// dims stay in cuDNN's order, the strides say the layout.
std::vector<int64_t> ChannelsLast(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  int64_t step = dims[1];
  for (int i = static_cast<int>(dims.size()) - 1; i >= 2; --i) {
    strides[i] = step;
    step *= dims[i];
  }
  strides[0] = step;
  return strides;
}

bool Aligned(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % kCudnnGraphAlignment == 0;
}

}  // namespace

CudnnGraphConv::~CudnnGraphConv() {
  for (Plan& plan : plans_) api_.BackendDestroyDescriptor(plan.desc);
  for (auto it = owned_.rbegin(); it != owned_.rend(); ++it) {
    api_.BackendDestroyDescriptor(*it);
  }
}

absl::StatusOr<std::unique_ptr<CudnnGraphConv>> CudnnGraphConv::Create(
    const CudnnApi& api, cudnnHandle_t handle, const CudnnConvProblem& p,
    bool allow_tf32, int max_plans) {
  cudnnDataType_t dtype;
  switch (p.dtype) {
    case DT_FLOAT: dtype = CUDNN_DATA_FLOAT; break;
    case DT_FLOAT16: dtype = CUDNN_DATA_HALF; break;
    case DT_BFLOAT16: dtype = CUDNN_DATA_BFLOAT16; break;
    default:
      return absl::UnimplementedError(
          absl::StrCat("the cuDNN graph route takes float32, float16 and bfloat16, not ",
                       DataTypeName(p.dtype)));
  }
  if (p.transpose) {
    return absl::UnimplementedError("the cuDNN graph route runs forward convolutions");
  }
  const size_t n = p.image.size();
  if (n < 2 || n > 3) {
    return absl::UnimplementedError("the cuDNN graph route takes 2 or 3 spatial dims");
  }
  std::unique_ptr<CudnnGraphConv> g(new CudnnGraphConv(api, handle));
  auto make = [&](cudnnBackendDescriptorType_t type) -> absl::StatusOr<cudnnBackendDescriptor_t> {
    cudnnBackendDescriptor_t d = nullptr;
    RETURN_IF_ERROR(api.Check(api.BackendCreateDescriptor(type, &d),
                              "cudnnBackendCreateDescriptor"));
    g->owned_.push_back(d);
    return d;
  };
  auto set = [&](cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
                 cudnnBackendAttributeType_t type, int64_t count, const void* v,
                 const char* what) {
    return api.Check(api.BackendSetAttribute(d, name, type, count, v),
                     absl::StrCat("cudnnBackendSetAttribute (", what, ")"));
  };
  auto finalize = [&](cudnnBackendDescriptor_t d, const char* what) {
    return api.Check(api.BackendFinalize(d),
                     absl::StrCat("cudnnBackendFinalize (", what, ")"));
  };

  // x [N, C, spatial], w [O, C / g, kernel], y [N, O, positions].
  std::vector<int64_t> xd = {p.batch, p.in_channels}, wd = {p.out_channels,
                                                            p.in_channels / p.group},
                       yd = {p.batch, p.out_channels};
  for (size_t d = 0; d < n; ++d) {
    xd.push_back(p.image[d]);
    wd.push_back(p.kernel[d]);
    yd.push_back(p.positions[d]);
  }
  auto tensor = [&](int64_t uid, const std::vector<int64_t>& dims)
      -> absl::StatusOr<cudnnBackendDescriptor_t> {
    ASSIGN_OR_RETURN(cudnnBackendDescriptor_t t, make(CUDNN_BACKEND_TENSOR_DESCRIPTOR));
    // NHWC: x, y and w (KRSC) all channels last.
    const std::vector<int64_t> strides =
        p.channels_last ? ChannelsLast(dims) : Packed(dims);
    const int64_t align = kCudnnGraphAlignment;
    RETURN_IF_ERROR(set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dtype, "dtype"));
    RETURN_IF_ERROR(set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64,
                        static_cast<int64_t>(dims.size()), dims.data(), "dims"));
    RETURN_IF_ERROR(set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64,
                        static_cast<int64_t>(strides.size()), strides.data(), "strides"));
    RETURN_IF_ERROR(set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid, "uid"));
    RETURN_IF_ERROR(set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align,
                        "alignment"));
    RETURN_IF_ERROR(finalize(t, "tensor"));
    return t;
  };
  ASSIGN_OR_RETURN(cudnnBackendDescriptor_t x, tensor(kX, xd));
  ASSIGN_OR_RETURN(cudnnBackendDescriptor_t w, tensor(kW, wd));
  ASSIGN_OR_RETURN(cudnnBackendDescriptor_t y, tensor(kY, yd));

  ASSIGN_OR_RETURN(cudnnBackendDescriptor_t conv,
                   make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR));
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const int64_t dims = static_cast<int64_t>(n);
  RETURN_IF_ERROR(set(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1,
                      &compute, "compute type"));
  RETURN_IF_ERROR(set(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE,
                      1, &mode, "mode"));
  RETURN_IF_ERROR(set(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &dims,
                      "spatial dims"));
  RETURN_IF_ERROR(set(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, dims,
                      p.dilations.data(), "dilations"));
  RETURN_IF_ERROR(set(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, dims,
                      p.strides.data(), "strides"));
  RETURN_IF_ERROR(set(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, dims,
                      p.pad_begin.data(), "pre paddings"));
  // CudnnCanExpress has checked that pad_begin at both ends gives positions.
  RETURN_IF_ERROR(set(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, dims,
                      p.pad_begin.data(), "post paddings"));
  RETURN_IF_ERROR(finalize(conv, "convolution"));

  ASSIGN_OR_RETURN(cudnnBackendDescriptor_t op,
                   make(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR));
  const float alpha = 1.0f, beta = 0.0f;
  RETURN_IF_ERROR(set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                      CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x, "x"));
  RETURN_IF_ERROR(set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                      CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w, "w"));
  RETURN_IF_ERROR(set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                      CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y, "y"));
  RETURN_IF_ERROR(set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                      CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv, "conv"));
  RETURN_IF_ERROR(set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT,
                      1, &alpha, "alpha"));
  RETURN_IF_ERROR(set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT,
                      1, &beta, "beta"));
  RETURN_IF_ERROR(finalize(op, "convolution forward"));

  ASSIGN_OR_RETURN(cudnnBackendDescriptor_t graph,
                   make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR));
  RETURN_IF_ERROR(set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                      1, &op, "ops"));
  RETURN_IF_ERROR(set(graph, kGraphHandle, CUDNN_TYPE_HANDLE, 1, &handle, "graph handle"));
  if (absl::Status s = finalize(graph, "operation graph"); !s.ok()) {
    return absl::UnimplementedError(s.message());
  }

  ASSIGN_OR_RETURN(cudnnBackendDescriptor_t heur,
                   make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR));
  const cudnnBackendHeurMode_t heur_mode = CUDNN_HEUR_MODE_A;
  RETURN_IF_ERROR(set(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                      CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph, "heuristics graph"));
  RETURN_IF_ERROR(set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &heur_mode,
                      "heuristics mode"));
  if (absl::Status s = finalize(heur, "heuristics"); !s.ok()) {
    return absl::UnimplementedError(s.message());
  }
  int64_t count = 0;
  RETURN_IF_ERROR(api.Check(api.BackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 0,
                                                    &count, nullptr),
                            "cudnnBackendGetAttribute (heuristics count)"));
  std::vector<cudnnBackendDescriptor_t> configs;
  for (int64_t i = 0; i < count; ++i) {
    ASSIGN_OR_RETURN(cudnnBackendDescriptor_t c, make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
    configs.push_back(c);
  }
  int64_t got = 0;
  if (count > 0) {
    RETURN_IF_ERROR(api.Check(
        api.BackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, configs.data()),
        "cudnnBackendGetAttribute (heuristics results)"));
  }
  const bool no_tensor_cores = p.dtype == DT_FLOAT && !allow_tf32;
  const bool depthwise = p.group > 1 && p.group == p.in_channels;
  for (int64_t i = 0; i < got && g->num_plans() < max_plans; ++i) {
    ASSIGN_OR_RETURN(cudnnBackendDescriptor_t engine, make(CUDNN_BACKEND_ENGINE_DESCRIPTOR));
    int64_t one = 0;
    if (!api.Check(api.BackendGetAttribute(configs[i], CUDNN_ATTR_ENGINECFG_ENGINE,
                                           CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &one, &engine),
                   "engine")
             .ok()) {
      continue;
    }
    cudnnBackendNumericalNote_t numerical[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    cudnnBackendBehaviorNote_t behavior[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
    int64_t n_numerical = 0, n_behavior = 0, index = -1;
    api.BackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                            CUDNN_TYPE_NUMERICAL_NOTE, CUDNN_NUMERICAL_NOTE_TYPE_COUNT,
                            &n_numerical, numerical);
    api.BackendGetAttribute(engine, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE,
                            CUDNN_TYPE_BEHAVIOR_NOTE, CUDNN_BEHAVIOR_NOTE_TYPE_COUNT,
                            &n_behavior, behavior);
    api.BackendGetAttribute(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1,
                            &one, &index);
    bool usable = true;
    for (int64_t k = 0; k < n_numerical && k < CUDNN_NUMERICAL_NOTE_TYPE_COUNT; ++k) {
      const cudnnBackendNumericalNote_t note = numerical[k];
      if (note == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION) usable = false;
      if (no_tensor_cores && (note == CUDNN_NUMERICAL_NOTE_TENSOR_CORE ||
                              note == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS)) {
        usable = false;
      }
    }
    for (int64_t k = 0; k < n_behavior && k < CUDNN_BEHAVIOR_NOTE_TYPE_COUNT; ++k) {
      if (behavior[k] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION && !depthwise) usable = false;
    }
    if (!usable) continue;
    Plan plan;
    plan.engine = index;
    if (!api.Check(api.BackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR,
                                               &plan.desc),
                   "plan")
             .ok()) {
      continue;
    }
    const bool made =
        set(plan.desc, kPlanHandle, CUDNN_TYPE_HANDLE, 1, &handle, "plan handle").ok() &&
        set(plan.desc, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
            CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &configs[i], "engine config")
            .ok() &&
        api.BackendFinalize(plan.desc) == CUDNN_STATUS_SUCCESS &&
        api.BackendGetAttribute(plan.desc, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                CUDNN_TYPE_INT64, 1, &one, &plan.workspace) ==
            CUDNN_STATUS_SUCCESS;
    if (!made || plan.workspace < 0) {
      api.BackendDestroyDescriptor(plan.desc);
      continue;
    }
    g->plans_.push_back(plan);
  }
  if (g->plans_.empty()) {
    return absl::UnimplementedError(absl::StrCat(
        "cuDNN's heuristics offer no engine sluice can use (", got, " ranked)"));
  }
  return g;
}

absl::Status CudnnGraphConv::Run(int plan, const void* x, const void* w, void* y,
                                 void* workspace) const {
  if (!Aligned(x) || !Aligned(w) || !Aligned(y) || !Aligned(workspace)) {
    return absl::FailedPreconditionError(
        "the cuDNN graph route needs 16-byte aligned tensors");
  }
  cudnnBackendDescriptor_t pack = nullptr;
  RETURN_IF_ERROR(api_.Check(
      api_.BackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack),
      "cudnnBackendCreateDescriptor (variant pack)"));
  const int64_t uids[3] = {kX, kW, kY};
  void* pointers[3] = {const_cast<void*>(x), const_cast<void*>(w), y};
  absl::Status s = api_.Check(
      api_.BackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64,
                               3, uids),
      "cudnnBackendSetAttribute (uids)");
  if (s.ok()) {
    s = api_.Check(api_.BackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                                            CUDNN_TYPE_VOID_PTR, 3, pointers),
                   "cudnnBackendSetAttribute (pointers)");
  }
  if (s.ok()) {
    s = api_.Check(api_.BackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
                                            CUDNN_TYPE_VOID_PTR, 1, &workspace),
                   "cudnnBackendSetAttribute (workspace)");
  }
  if (s.ok()) s = api_.Check(api_.BackendFinalize(pack), "cudnnBackendFinalize (variant pack)");
  if (s.ok()) {
    s = api_.Check(api_.BackendExecute(handle_, plans_[plan].desc, pack),
                   "cudnnBackendExecute");
  }
  api_.BackendDestroyDescriptor(pack);
  return s;
}

}  // namespace sluice::cuda
