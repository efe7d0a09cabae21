// If, Loop and Scan on the CPU: the kernels of kernels/control_flow_kernels.h
// over host memory.
#include <cstring>

#include "kernels/control_flow_kernels.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"

namespace sluice::cpu {
namespace {

class CpuControlFlowMemory final : public ControlFlowMemory {
 public:
  absl::Status ReadToHost(OpKernelContext*, const Tensor& t, bool, void* dst,
                          size_t bytes) const override {
    std::memcpy(dst, t.raw_data(), bytes);
    return absl::OkStatus();
  }
  absl::StatusOr<Tensor> FromHost(OpKernelContext*,
                                  const Tensor& host) const override {
    return host;
  }
  absl::Status Copy2D(OpKernelContext*, void* dst, int64_t dst_pitch,
                      const void* src, int64_t src_pitch, int64_t width,
                      int64_t rows) const override {
    for (int64_t r = 0; r < rows; ++r) {
      std::memcpy(static_cast<char*>(dst) + r * dst_pitch,
                  static_cast<const char*>(src) + r * src_pitch, width);
    }
    return absl::OkStatus();
  }
};

}  // namespace

void RegisterControlFlowKernels(KernelRegistry* r) {
  static const CpuControlFlowMemory* memory = new CpuControlFlowMemory();
  r->Register(CpuKernel("If", {}, IfKernelFactory(memory)));
  r->Register(CpuKernel("Loop", {}, LoopKernelFactory(memory)));
  r->Register(CpuKernel("Scan", {}, ScanKernelFactory(memory)));
}

}  // namespace sluice::cpu
