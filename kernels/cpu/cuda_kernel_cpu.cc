// CudaKernel on the CPU. A CudaKernel node carries CUDA C++ source, which
// only a GPU runs (kernels/cuda/cuda_kernel_op.cc). On the CPU the node
// runs its `cpu_fallback` subgraph when it has one (compiled once when the
// plan is made, like If's branches: kernels/subgraph_kernel.h); without one
// the kernel's capability check refuses the node, so the placer reports
// why ("runs only on a GPU") where a missing kernel would only say "no
// kernel", and a graph placed without a GPU fails naming the node.
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/cuda_kernel_spec.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/subgraph_kernel.h"

namespace sluice::cpu {
namespace {

constexpr char kGpuOnly[] =
    "a CudaKernel runs only on a GPU (its CUDA C++ source is compiled with "
    "NVRTC for the GPU); give it a cpu_fallback graph to run it on the CPU";

class CudaKernelFallback final : public SubgraphKernel {
 public:
  using Attrs = CudaKernelSpec;
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    return ParseCudaKernelSpec(node.attrs(), node.num_inputs());
  }
  CudaKernelFallback(const Node& node, Attrs spec)
      : SubgraphKernel(node), spec_(std::move(spec)) {}

  absl::Status CompileSubgraphs(const SubgraphCompiler& compile) override {
    ASSIGN_OR_RETURN(fallback_, compile(*node().subgraph("cpu_fallback")));
    return absl::OkStatus();
  }

  absl::Status Compute(OpKernelContext* ctx) override {
    if (fallback_ == nullptr) {
      return absl::InternalError("cpu_fallback was not compiled");
    }
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    std::vector<Tensor> inputs;
    for (int i = 0; i < ctx->num_inputs(); ++i) inputs.push_back(ctx->input(i));
    ASSIGN_OR_RETURN(std::vector<Tensor> outputs,
                     fallback_->Run(std::move(inputs), ctx->step_limits()));
    if (static_cast<int>(outputs.size()) != ctx->num_outputs()) {
      return absl::InternalError(absl::StrCat("cpu_fallback gave ", outputs.size(),
                                              " outputs for ", ctx->num_outputs()));
    }
    // The fallback must give what the GPU kernel would: the node's dtypes
    // and the shapes its rule gives for these inputs.
    std::vector<Shape> in_shapes;
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      in_shapes.push_back(ctx->input(i).shape());
    }
    const std::vector<Shape> want = spec_.OutputShapes(in_shapes);
    for (int i = 0; i < ctx->num_outputs(); ++i) {
      if (outputs[i].shape() != want[i] ||
          outputs[i].dtype() != spec_.output_dtypes[i]) {
        return absl::InvalidArgumentError(absl::StrCat(
            "cpu_fallback output ", i, " is ", DataTypeName(outputs[i].dtype()),
            outputs[i].shape().DebugString(), " but the node's rule gives ",
            DataTypeName(spec_.output_dtypes[i]), want[i].DebugString()));
      }
      ctx->set_output(i, std::move(outputs[i]));
    }
    return absl::OkStatus();
  }

 private:
  const CudaKernelSpec spec_;
  std::unique_ptr<CompiledSubgraph> fallback_;  // set once, before Compute
};

}  // namespace

void RegisterCudaKernelFallback(KernelRegistry* registry) {
  KernelDef def = CpuKernel("CudaKernel", {}, MakeKernel<CudaKernelFallback>);
  def.supports = [](const Node& node) {
    return node.subgraph("cpu_fallback") != nullptr
               ? absl::OkStatus()
               : absl::UnimplementedError(kGpuOnly);
  };
  registry->Register(std::move(def));
}

}  // namespace sluice::cpu
