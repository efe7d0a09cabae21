// The CPU's execution provider (kernels/cpu/cpu_provider.h).
#include "kernels/cpu/cpu_provider.h"

#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/omp_threads.h"
#include "kernels/cpu/onednn_conv_nhwc.h"
#include "kernels/cpu/sgemm.h"

namespace sluice {

CpuProviderOptions CpuProviderOptionsFromConfig(const RuntimeConfig& config) {
  CpuProviderOptions options;
  switch (config.cpu_convolutions()) {
    case CPU_CONVOLUTIONS_ONEDNN:
      options.convolutions = CpuConvPath::kOneDnn;
      break;
    case CPU_CONVOLUTIONS_LOOPS:
      options.convolutions = CpuConvPath::kLoops;
      break;
    default:
      options.convolutions = CpuConvPath::kAuto;
      break;
  }
  options.intra_op_threads =
      config.intra_op_threads() > 0
          ? config.intra_op_threads()
          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return options;
}

CpuProvider::CpuProvider(CpuProviderOptions options) : options_(options) {}

const CpuProvider& CpuProvider::Default() {
  static const CpuProvider* provider = new CpuProvider();
  return *provider;
}

bool CpuProvider::RunsNhwcConvolutionsOnOneDnn() const {
  return cpu::OneDnnConvolutionsBuiltIn() &&
         options_.convolutions != CpuConvPath::kLoops;
}

OptimizationTarget CpuProvider::Target() const {
  OptimizationTarget target;
  target.provider = std::string(name());
  target.convs_apply_smooth_activations = true;  // kernels/cpu/conv_activation.h
  // dnnl_sgemm ran [k, n] weights with 4096-byte rows 2.4-2.8x slower than
  // the same weights transposed (AVX-512, 2026-12-05), and with 2048-byte
  // rows (n = 512, 1536) 25-40% slower on AVX2 (2026-12-07), other rows at
  // most 5% either way (docs/design.md decisions 47, 69).
  target.gemm_transposed_weight_row_bytes = 2048;
  // Float32 channels last where oneDNN runs it, grouped models too
  // (MobileNetV2 ran 3.1x faster so); 16-bit convolutions have no fast
  // path here, and stay NCHW.
  if (RunsNhwcConvolutionsOnOneDnn()) {
    target.conv_layout_float32 = DataFormat::kNhwc;
  }
  return target;
}

std::vector<LibraryReport> CpuProvider::Libraries() const {
  LibraryReport onednn;
  onednn.name = "oneDNN";
  onednn.available = cpu::OneDnnConvolutionsBuiltIn();
  if (!onednn.available) {
    onednn.detail = "not built in: convolutions and GEMMs on sluice's loops "
                    "and Eigen";
  } else {
    onednn.detail = absl::StrCat(
        cpu::OneDnnVersion(), ": convolutions ",
        options_.convolutions == CpuConvPath::kLoops
            ? "off (cpu_convolutions LOOPS)"
            : "on",
        ", sgemm ", cpu::SgemmUsesOneDnn() ? "on" : "off");
  }
  return {onednn};
}

bool CpuProvider::RunsNodesOneAtATime(const Graph& graph,
                                      absl::Span<const int> nodes) const {
  if (cpu::OmpTeamsBuiltIn() &&
      options_.intra_op_threads >= cpu::kLeastThreadsForTeamRegions) {
    return !nodes.empty();
  }
  if (!RunsNhwcConvolutionsOnOneDnn()) return false;
  for (int id : nodes) {
    const Node& n = graph.node(id);
    if (n.op() != "Conv2D" && n.op() != "FusedConv2D") continue;
    absl::StatusOr<DataFormat> format = GetDataFormat(n.attrs());
    if (format.ok() && *format == DataFormat::kNhwc &&
        n.num_outputs() > 0 && n.output_dtype(0) == DT_FLOAT) {
      return true;
    }
  }
  return false;
}

const CpuProvider& CpuProviderOf(const Device* device) {
  if (device == nullptr || device->provider() == nullptr) {
    return CpuProvider::Default();
  }
  return static_cast<const CpuProvider&>(*device->provider());
}

}  // namespace sluice
