// If, Loop and Scan on a GPU: the kernels of kernels/control_flow_kernels.h
// over the GPU's memory, with their subgraphs compiled on the same GPU
// (executor/subgraph.h). A node qualifies when every node of its subgraphs
// (nested control flow included) has a GPU kernel that can run it;
// otherwise the placer keeps it, and its subgraphs, on the CPU and says
// which node is why. If's cond and Loop's trip count and initial cond are
// read in host memory; Loop reads its body's cond output back to the host
// each iteration (a wait for the GPU, as any data-dependent loop needs).
// Scan slices and stacks with 2-D copies on the compute stream.
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/control_flow_kernels.h"
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"

namespace sluice::cuda {
namespace {

class GpuControlFlowMemory final : public ControlFlowMemory {
 public:
  absl::Status ReadToHost(OpKernelContext* ctx, const Tensor& t,
                          bool device_memory, void* dst,
                          size_t bytes) const override {
    if (!device_memory) {
      std::memcpy(dst, t.raw_data(), bytes);
      return absl::OkStatus();
    }
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    gpu.device->NoteKernelHostWait();
    RETURN_IF_ERROR(CudaStatus(cudaMemcpyAsync(dst, t.raw_data(), bytes,
                                               cudaMemcpyDeviceToHost,
                                               gpu.stream),
                               "reading a control-flow value"));
    return CudaStatus(cudaStreamSynchronize(gpu.stream),
                      "waiting for a control-flow value");
  }
  absl::StatusOr<Tensor> FromHost(OpKernelContext* ctx,
                                  const Tensor& host) const override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    return gpu.device->CopyToDevice(host);
  }
  absl::Status Copy2D(OpKernelContext* ctx, void* dst, int64_t dst_pitch,
                      const void* src, int64_t src_pitch, int64_t width,
                      int64_t rows) const override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    return CudaStatus(
        cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width, rows,
                          cudaMemcpyDeviceToDevice, gpu.stream),
        "copying a scan slice");
  }
};

// OK when every node of the node's subgraphs can run on a GPU.
absl::Status SubgraphsOnGpu(const Node& node) {
  for (const Graph* g : Subgraphs(node)) {
    for (const Node& n : g->nodes()) {
      if (n.op() == "Input" || n.is_const()) continue;
      absl::Status s = KernelRegistry::Global()->Supports(n, DeviceType::kGpu);
      if (!s.ok()) {
        return absl::Status(
            s.code(), absl::StrCat("its subgraph node '", n.name(), "' (",
                                   n.op(), ") cannot run on a GPU: ",
                                   s.message()));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

void RegisterControlFlowKernels(KernelRegistry* registry) {
  static const GpuControlFlowMemory* memory = new GpuControlFlowMemory();
  RegisterGpu(registry, "If", {}, IfKernelFactory(memory),
              /*host_memory_inputs=*/{0}, SubgraphsOnGpu);
  RegisterGpu(registry, "Loop", {}, LoopKernelFactory(memory),
              /*host_memory_inputs=*/{0, 1}, SubgraphsOnGpu);
  RegisterGpu(registry, "Scan", {}, ScanKernelFactory(memory),
              /*host_memory_inputs=*/{}, SubgraphsOnGpu);
}

}  // namespace sluice::cuda
