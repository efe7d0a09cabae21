// The GPU kernel of FusedElementwise (graph/elementwise_program.h): CUDA
// C++ generated from the node's program for its dtype and the inputs'
// broadcast class (kernels/fused_elementwise_source.h), compiled with NVRTC
// through the process-wide cache CudaKernel uses
// (kernels/cuda/nvrtc_kernel_cache.h), so each (program, dtype, class) is
// compiled once per process and architecture. When the node's shapes are
// known when the kernel is made (a plan compiles), it compiles then, for
// every visible GPU's architecture, and a compile error is an error of the
// plan with NVRTC's log; a class first seen in a step (symbolic shapes)
// compiles in that step, once. Compute makes no host synchronisation: one
// cudaLaunchKernel on the compute stream, so it records into CUDA graphs.
#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/status_macros.h"
#include "device/cuda/nvrtc_library.h"
#include "graph/elementwise_program.h"
#include "graph/shape_fns.h"
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/fused_elementwise.h"
#include "kernels/cuda/nvrtc_kernel_cache.h"
#include "kernels/fused_elementwise_source.h"

namespace sluice::cuda {

absl::StatusOr<const CompiledCudaKernel*> CompileFusedElementwise(
    const ElementwiseProgram& program, DataType dtype,
    const FusedElementwiseLayout& layout, int sm) {
  ASSIGN_OR_RETURN(std::string source,
                   FusedElementwiseSource(program, dtype, layout));
  absl::StatusOr<const CompiledCudaKernel*> k =
      CompileCudaKernel(source, kFusedElementwiseKernelName, {}, sm);
  if (!k.ok()) {
    return absl::Status(
        k.status().code(),
        absl::StrCat("FusedElementwise (", program.DebugString(), ", ",
                     DataTypeName(dtype), ", ", layout.ClassKey(),
                     "): ", k.status().message()));
  }
  return k;
}

namespace {

constexpr int kThreads = 256;
// Blocks per launch at most; the grid-stride loop covers the rest.
constexpr int64_t kMaxBlocks = int64_t{1} << 20;

int SmOf(const GpuInfo& info) { return info.cc_major * 10 + info.cc_minor; }

// The output shape and the layout of the inputs `shapes` (fully defined).
absl::StatusOr<std::pair<Shape, FusedElementwiseLayout>> Layout(
    const std::vector<const Shape*>& shapes) {
  Shape out = *shapes[0];
  for (const Shape* s : shapes) {
    ASSIGN_OR_RETURN(out, BroadcastShapes(out, *s));
  }
  FusedElementwiseLayout layout = LayoutFusedElementwise(out, shapes);
  return std::make_pair(std::move(out), std::move(layout));
}

class FusedElementwiseGpuKernel final : public OpKernel {
 public:
  struct Attrs {
    ElementwiseProgram program;
    // Compiled when the kernel was made: (class key, architecture).
    std::map<std::pair<std::string, int>, const CompiledCudaKernel*> compiled;
  };

  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.program,
                     ParseElementwiseProgram(node.attrs(), node.num_inputs()));
    std::vector<const Shape*> shapes;
    for (int i = 0; i < node.num_inputs(); ++i) {
      if (!node.input_shape(i).IsFullyDefined()) return a;  // on first use
      shapes.push_back(&node.input_shape(i));
    }
    ASSIGN_OR_RETURN(auto layout, Layout(shapes));
    if (layout.first.num_elements() == 0) return a;
    ASSIGN_OR_RETURN(std::vector<int> archs, VisibleCudaArchitectures());
    for (int sm : archs) {
      ASSIGN_OR_RETURN(
          (a.compiled[{layout.second.ClassKey(), sm}]),
          CompileFusedElementwise(a.program, node.output_dtype(0),
                                  layout.second, sm));
    }
    return a;
  }

  FusedElementwiseGpuKernel(const Node& node, Attrs attrs)
      : OpKernel(node),
        program_(std::move(attrs.program)),
        compiled_(std::move(attrs.compiled)) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu));
    const DataType dtype = node().output_dtype(0);
    std::vector<const Shape*> shapes;
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      if (ctx->input(i).dtype() != dtype) {
        return absl::InvalidArgumentError(absl::StrCat(
            "FusedElementwise input ", i, " is ",
            DataTypeName(ctx->input(i).dtype()), "; want ",
            DataTypeName(dtype)));
      }
      shapes.push_back(&ctx->input(i).shape());
    }
    ASSIGN_OR_RETURN(auto layout, Layout(shapes));
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, layout.first));
    const FusedElementwiseLayout& l = layout.second;
    if (l.num_elements == 0) return absl::OkStatus();
    ASSIGN_OR_RETURN(const CompiledCudaKernel* kernel,
                     Kernel(l, dtype, SmOf(gpu.device->info())));
    std::vector<void*> pointers;
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      pointers.push_back(ctx->input(i).raw_data());
    }
    pointers.push_back(y->raw_data());
    FusedElementwiseArgs args = MakeFusedElementwiseArgs(l);
    std::vector<void*> params;
    for (void*& p : pointers) params.push_back(&p);
    params.push_back(&args);
    const int64_t blocks =
        std::min((l.num_elements + kThreads - 1) / kThreads, kMaxBlocks);
    return CudaStatus(
        cudaLaunchKernel(reinterpret_cast<const void*>(kernel->kernel),
                         dim3(static_cast<unsigned>(blocks)), dim3(kThreads),
                         params.data(), 0, gpu.stream),
        "launching FusedElementwise");
  }

 private:
  // The kernel for this class and architecture: made with the kernel, or
  // compiled (once) the first time a step meets it.
  absl::StatusOr<const CompiledCudaKernel*> Kernel(
      const FusedElementwiseLayout& l, DataType dtype, int sm) {
    const std::pair<std::string, int> key = {l.ClassKey(), sm};
    auto it = compiled_.find(key);
    if (it != compiled_.end()) return it->second;
    absl::MutexLock lock(&mu_);
    auto late = late_.find(key);
    if (late != late_.end()) return late->second;
    ASSIGN_OR_RETURN(const CompiledCudaKernel* k,
                     CompileFusedElementwise(program_, dtype, l, sm));
    late_[key] = k;
    return k;
  }

  // Fixed after construction.
  const ElementwiseProgram program_;
  const std::map<std::pair<std::string, int>, const CompiledCudaKernel*>
      compiled_;

  absl::Mutex mu_;
  std::map<std::pair<std::string, int>, const CompiledCudaKernel*> late_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace

void RegisterFusedElementwiseKernels(KernelRegistry* registry) {
  // The optimizer makes these nodes on its own: where NVRTC cannot be
  // loaded the placer must put them on the CPU, not fail the plan.
  KernelSupports ranks = RanksAtMost(kFusedElementwiseMaxGpuRank);
  KernelSupports supports = [ranks](const Node& node) -> absl::Status {
    RETURN_IF_ERROR(ranks(node));
    absl::StatusOr<const NvrtcApi*> nvrtc = GetNvrtc();
    if (!nvrtc.ok()) {
      return absl::UnimplementedError(absl::StrCat(
          "FusedElementwise compiles its GPU kernel with NVRTC: ",
          nvrtc.status().message()));
    }
    return absl::OkStatus();
  };
  RegisterGpu(registry, "FusedElementwise", {{"T", GpuFloatTypes()}},
              MakeKernel<FusedElementwiseGpuKernel>, {}, std::move(supports));
}

}  // namespace sluice::cuda
