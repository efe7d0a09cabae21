// Slice (NumPy / ONNX): per-axis begin, end and step; negative bounds count
// from the end and are clamped, steps may be negative. The result is a
// strided view of the input, copied densely. DynamicSlice reads begin, end,
// axes and steps from inputs 1-4. Any dtype.
#include <vector>

#include "core/status_macros.h"
#include "graph/runtime_params.h"
#include "graph/shape_fns.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/strided_copy.h"

namespace sluice::cpu {
namespace {

template <bool kDynamic>
class SliceKernel final : public OpKernel {
 public:
  struct Attrs {
    DataType t = DT_INVALID;
    std::vector<int64_t> begin;
    std::vector<int64_t> end;
    std::vector<int64_t> axes;
    std::vector<int64_t> steps;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.t, node.attrs().GetType("T"));
    if constexpr (kDynamic) return a;
    ASSIGN_OR_RETURN(a.begin, node.attrs().GetIntList("begin"));
    ASSIGN_OR_RETURN(a.end, node.attrs().GetIntList("end"));
    ASSIGN_OR_RETURN(a.axes, node.attrs().GetIntList("axes"));
    ASSIGN_OR_RETURN(a.steps, node.attrs().GetIntList("steps"));
    return a;
  }
  SliceKernel(const Node& node, Attrs attrs)
      : OpKernel(node), attrs_(std::move(attrs)) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    const DataType t = attrs_.t;
    RETURN_IF_ERROR(CheckDtype(x, t, "input"));
    std::vector<int64_t> begin = attrs_.begin;
    std::vector<int64_t> end = attrs_.end;
    std::vector<int64_t> axes = attrs_.axes;
    std::vector<int64_t> steps = attrs_.steps;
    if constexpr (kDynamic) {
      ASSIGN_OR_RETURN(begin, IntParamValues(ctx->input(1), "starts"));
      ASSIGN_OR_RETURN(end, IntParamValues(ctx->input(2), "ends"));
      ASSIGN_OR_RETURN(axes, IntParamValues(ctx->input(3), "axes"));
      ASSIGN_OR_RETURN(steps, IntParamValues(ctx->input(4), "steps"));
    }
    // Checks lengths, steps, axes and bounds.
    ASSIGN_OR_RETURN(Shape shape,
                     ::sluice::SliceShape(x.shape(), begin, end, axes, steps));
    if (axes.empty()) {
      for (size_t i = 0; i < begin.size(); ++i) axes.push_back(i);
    }
    ASSIGN_OR_RETURN(std::vector<int> norm,
                     ::sluice::NormalizeAxes(axes, x.rank()));
    const DimVector in_strides = RowMajorStrides(x.shape());
    DimVector strides = in_strides;
    int64_t base = 0;
    for (size_t i = 0; i < norm.size(); ++i) {
      const int d = norm[i];
      ASSIGN_OR_RETURN(SliceDim sd,
                       ::sluice::NormalizeSlice(x.dim(d), begin[i], end[i],
                                                steps.empty() ? 1 : steps[i]));
      base += sd.start * in_strides[d];
      strides[d] = in_strides[d] * sd.step;
    }
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    if (y->NumElements() == 0) return absl::OkStatus();
    return VisitBySize(t, [&](auto tag) {
      using T = typename decltype(tag)::type;
      StridedCopy<T>(*ctx, x.data<T>() + base, y->data<T>(), shape.dims(),
                     strides);
      return absl::OkStatus();
    });
  }

 private:
  const Attrs attrs_;
};

}  // namespace

void RegisterSliceKernels(KernelRegistry* r) {
  r->Register(CpuKernel("Slice", {{"T", CpuAllTypes()}},
                        MakeKernel<SliceKernel<false>>));
  r->Register(CpuKernel("DynamicSlice", {{"T", CpuAllTypes()}},
                        MakeKernel<SliceKernel<true>>));
}

}  // namespace sluice::cpu
