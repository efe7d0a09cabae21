// Pad (ONNX): constant, reflect, edge and wrap, any rank and dtype, pads,
// value and axes read at run time. Negative pads crop first; the positive
// pads then extend the cropped input. Each output dim maps its indices to
// an input index (or -1: the constant) once; the copy walks the output with
// an odometer.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/status_macros.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/launch_kernel.h"
#include "kernels/vision_params.h"

namespace sluice::cpu {
namespace {

// Index into [0, n) of position i (which may lie outside) for `mode`; -1
// for the constant.
int64_t SourceIndex(int64_t i, int64_t n, PadMode mode) {
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case PadMode::kConstant:
      return -1;
    case PadMode::kEdge:
      return i < 0 ? 0 : n - 1;
    case PadMode::kWrap:
      return ((i % n) + n) % n;
    case PadMode::kReflect: {
      if (n == 1) return 0;
      const int64_t period = 2 * (n - 1);
      int64_t r = ((i % period) + period) % period;
      return r < n ? r : period - r;
    }
  }
  return -1;
}

class PadKernel final : public LaunchKernel<PadMode, ParsePadMode> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override;
};

absl::Status PadKernel::Compute(OpKernelContext* ctx) {
  RETURN_IF_ERROR(CheckHostInputs(*ctx));
  const Tensor& x = ctx->input(0);
  const Tensor& value = ctx->input(2);
  ASSIGN_OR_RETURN(std::vector<PadAxis> pad_axes,
                   PlanPad(x, ctx->input(1), value, ctx->input(3),
                           attrs()));
  const int rank = x.rank();
  std::vector<int64_t> dims(rank);
  std::vector<std::vector<int64_t>> maps(rank);
  for (int d = 0; d < rank; ++d) {
    const PadAxis& a = pad_axes[d];
    dims[d] = a.out;
    maps[d].resize(dims[d]);
    for (int64_t o = 0; o < dims[d]; ++o) {
      const int64_t s = SourceIndex(o - a.begin, a.len, attrs());
      maps[d][o] = s < 0 ? -1 : s + a.lo;
    }
  }
  ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape(dims)));
  const int64_t total = y->NumElements();
  if (total == 0) return absl::OkStatus();
  const DimVector strides = RowMajorStrides(x.shape());
  return VisitBySize(x.dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    T fill{};
    if (value.NumElements() == 1) std::memcpy(&fill, value.raw_data(), sizeof(T));
    const T* in = static_cast<const T*>(x.raw_data());
    T* out = static_cast<T*>(y->raw_data());
    std::vector<int64_t> idx(rank, 0);
    for (int64_t i = 0; i < total; ++i) {
      int64_t off = 0;
      bool constant = false;
      for (int d = 0; d < rank; ++d) {
        const int64_t s = maps[d][idx[d]];
        if (s < 0) {
          constant = true;
          break;
        }
        off += s * strides[d];
      }
      out[i] = constant ? fill : in[off];
      for (int d = rank - 1; d >= 0; --d) {
        if (++idx[d] < dims[d]) break;
        idx[d] = 0;
      }
    }
    return absl::OkStatus();
  });
}

}  // namespace

void RegisterPadKernels(KernelRegistry* r) {
  r->Register(
      CpuKernel("Pad", {{"T", CpuAllTypes()}}, MakeKernel<PadKernel>));
}

}  // namespace sluice::cpu
