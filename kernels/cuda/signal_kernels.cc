// CUDA OpKernels for the signal ops: Window (its size a host-memory input,
// checked as on the CPU, kernels/cpu/signal.cc).
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/signal.h"
#include "kernels/host_params.h"

namespace sluice::cuda {
namespace {

class WindowKernel final : public OpKernel {
 public:
  struct Attrs {
    DataType t = DT_INVALID;
    WindowKind kind = WindowKind::kHann;
    bool periodic = true;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.t, node.attrs().GetType("T"));
    ASSIGN_OR_RETURN(std::string window, node.attrs().GetString("window"));
    ASSIGN_OR_RETURN(a.periodic, node.attrs().GetBool("periodic"));
    if (window == "hann") {
      a.kind = WindowKind::kHann;
    } else if (window == "hamming") {
      a.kind = WindowKind::kHamming;
    } else if (window == "blackman") {
      a.kind = WindowKind::kBlackman;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "window must be hann, hamming or blackman, got ", window));
    }
    return a;
  }
  WindowKernel(const Node& node, Attrs attrs) : OpKernel(node), attrs_(attrs) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, /*host_inputs=*/{0}));
    ASSIGN_OR_RETURN(int64_t size,
                     HostScalarInt(ctx->input(0), "the window size"));
    if (size < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("the window size must be >= 0, got ", size));
    }
    ASSIGN_OR_RETURN(Tensor * y,
                     ctx->allocate_output(0, Shape({size}), attrs_.t));
    return LaunchWindow(ToGpuDtype(attrs_.t), attrs_.kind, y->raw_data(), size,
                        attrs_.periodic, gpu.stream);
  }

 private:
  const Attrs attrs_;
};

}  // namespace

void RegisterSignalKernels(KernelRegistry* registry) {
  std::vector<DataType> window_types;
  for (DataType t : GpuFloatTypes()) {
    if (HasWindowKernel(ToGpuDtype(t))) window_types.push_back(t);
  }
  RegisterGpu(registry, "Window",
              {{"T", window_types}, {"Tsize", {DT_INT32, DT_INT64}}},
              MakeKernel<WindowKernel>, /*host_memory_inputs=*/{0});
}

}  // namespace sluice::cuda
