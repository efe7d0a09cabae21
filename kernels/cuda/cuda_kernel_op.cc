// The GPU kernel of CudaKernel (docs/ops.md, "Custom CUDA kernels"): the
// node's CUDA C++ source, compiled with NVRTC when the kernel is made (a
// plan compiles) for the architecture of every visible GPU, and launched
// once per step on the compute stream as
//   kernel_name(inputs..., outputs..., long long n).
// Compilation is cached for the process (nvrtc_kernel_cache.h), so plans
// of other shapes and other sessions reuse it.
#include <algorithm>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/cuda_kernel_spec.h"
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/nvrtc_kernel_cache.h"

namespace sluice::cuda {
namespace {

// Compute capability as major * 10 + minor (90 for the H200).
int SmOf(const GpuInfo& info) { return info.cc_major * 10 + info.cc_minor; }

class CudaKernelOp : public OpKernel {
 public:
  struct Attrs {
    CudaKernelSpec spec;
    std::map<int, const CompiledCudaKernel*> compiled;  // by architecture
  };

  // Parses the node and compiles its source for every visible GPU's
  // architecture, so a compile error is an error of the plan, with the
  // compiler's log, before any step runs.
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.spec, ParseCudaKernelSpec(node.attrs(), node.num_inputs()));
    ASSIGN_OR_RETURN(std::vector<int> archs, VisibleCudaArchitectures());
    for (int sm : archs) {
      ASSIGN_OR_RETURN(a.compiled[sm], Compiled(a.spec, sm));
    }
    return a;
  }

  CudaKernelOp(const Node& node, Attrs attrs)
      : OpKernel(node),
        spec_(std::move(attrs.spec)),
        compiled_(std::move(attrs.compiled)) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu));
    const int sm = SmOf(gpu.device->info());
    auto it = compiled_.find(sm);
    const CompiledCudaKernel* kernel = nullptr;
    if (it != compiled_.end()) {
      kernel = it->second;
    } else {  // a GPU made visible after the plan (the cache is shared)
      ASSIGN_OR_RETURN(kernel, Compiled(spec_, sm));
    }
    std::vector<Shape> in_shapes;
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      in_shapes.push_back(ctx->input(i).shape());
    }
    const std::vector<Shape> out_shapes = spec_.OutputShapes(in_shapes);
    ASSIGN_OR_RETURN(CudaLaunch launch, spec_.Launch(out_shapes));
    // Arguments: one device pointer per input, then per output, then n.
    std::vector<void*> pointers;
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      pointers.push_back(ctx->input(i).raw_data());
    }
    for (int i = 0; i < ctx->num_outputs(); ++i) {
      ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(i, out_shapes[i]));
      pointers.push_back(out->raw_data());
    }
    long long n = static_cast<long long>(launch.element_count);  // NOLINT
    if (launch.empty()) return absl::OkStatus();
    std::vector<void*> args;
    for (void*& p : pointers) args.push_back(&p);
    args.push_back(&n);
    const dim3 grid(static_cast<unsigned>(launch.grid[0]),
                    static_cast<unsigned>(launch.grid[1]),
                    static_cast<unsigned>(launch.grid[2]));
    const dim3 block(static_cast<unsigned>(launch.block[0]),
                     static_cast<unsigned>(launch.block[1]),
                     static_cast<unsigned>(launch.block[2]));
    return CudaStatus(
        cudaLaunchKernel(reinterpret_cast<const void*>(kernel->kernel), grid,
                         block, args.data(),
                         static_cast<size_t>(launch.shared_memory_bytes),
                         gpu.stream),
        "launching the CudaKernel");
  }

 private:
  static absl::StatusOr<const CompiledCudaKernel*> Compiled(
      const CudaKernelSpec& spec, int sm) {
    return CompileCudaKernel(spec.source, spec.kernel_name, spec.options, sm);
  }

  const CudaKernelSpec spec_;
  const std::map<int, const CompiledCudaKernel*> compiled_;
};

}  // namespace

void RegisterCudaKernelOpKernels(KernelRegistry* registry) {
  RegisterGpu(registry, "CudaKernel", {}, MakeKernel<CudaKernelOp>);
}

}  // namespace sluice::cuda
