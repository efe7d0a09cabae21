// Range (start, limit, delta scalars in), Fill (a runtime shape filled with
// one value: ONNX ConstantOfShape) and Tile (runtime repeats): the ops that
// build tensors from runtime parameters (docs/ops.md, "Runtime parameters").
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/runtime_params.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/dynamic_params.h"
#include "kernels/launch_kernel.h"

namespace sluice::cpu {
namespace {

// The setup of Range and Fill is kernels/dynamic_params.h.
class RangeKernel final : public LaunchKernel<RangeAttrs, ParseRangeAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    ASSIGN_OR_RETURN(RangePlan p, PlanRange(attrs(), ctx->input(0),
                                            ctx->input(1), ctx->input(2)));
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, p.out_shape));
    return VisitArith(attrs().t, [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      using C = typename ComputeType<T>::type;
      const C start = static_cast<C>(ctx->input(0).data<T>()[0]);
      const C delta = static_cast<C>(ctx->input(2).data<T>()[0]);
      T* out = y->data<T>();
      for (int64_t i = 0; i < p.n; ++i) {
        out[i] = static_cast<T>(start + static_cast<C>(i) * delta);
      }
      return absl::OkStatus();
    });
  }
};

class FillKernel final : public LaunchKernel<FillAttrs, ParseFillAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    ASSIGN_OR_RETURN(Shape shape, PlanFill(ctx->input(0)));
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    return VisitBySize(attrs().dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T v;
      std::memcpy(&v, attrs().value.raw_data(), sizeof(T));
      T* out = static_cast<T*>(y->raw_data());
      const int64_t n = y->NumElements();
      for (int64_t i = 0; i < n; ++i) out[i] = v;
      return absl::OkStatus();
    });
  }
};

class TileKernel final : public OpKernel {
 public:
  struct Attrs {
    DataType t = DT_INVALID;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.t, node.attrs().GetType("T"));
    return a;
  }
  TileKernel(const Node& node, Attrs attrs) : OpKernel(node), attrs_(attrs) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    RETURN_IF_ERROR(CheckDtype(x, attrs_.t, "input"));
    ASSIGN_OR_RETURN(std::vector<int64_t> repeats,
                     IntParamValues(ctx->input(1), "repeats"));
    const int r = x.rank();
    if (static_cast<int>(repeats.size()) != r) {
      return absl::InvalidArgumentError(absl::StrCat(
          repeats.size(), " repeats for an input of rank ", r));
    }
    std::vector<int64_t> dims(r);
    for (int d = 0; d < r; ++d) {
      if (repeats[d] < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("repeat ", repeats[d], " is negative"));
      }
      dims[d] = x.dim(d) * repeats[d];
    }
    Shape out_shape(dims);
    if (out_shape.num_elements() > kMaxElements) {
      return absl::InvalidArgumentError("the tiled tensor is too large");
    }
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, out_shape));
    const int64_t n = y->NumElements();
    if (n == 0) return absl::OkStatus();
    const DimVector in_strides = RowMajorStrides(x.shape());
    return VisitBySize(attrs_.t, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = static_cast<const T*>(x.raw_data());
      T* out = static_cast<T*>(y->raw_data());
      // Odometer over the output: idx[d] in [0, dims[d]), the input index
      // is idx[d] % x.dim(d).
      std::vector<int64_t> idx(r, 0);
      for (int64_t i = 0; i < n; ++i) {
        int64_t off = 0;
        for (int d = 0; d < r; ++d) off += (idx[d] % x.dim(d)) * in_strides[d];
        out[i] = in[off];
        for (int d = r - 1; d >= 0; --d) {
          if (++idx[d] < dims[d]) break;
          idx[d] = 0;
        }
      }
      return absl::OkStatus();
    });
  }

 private:
  const Attrs attrs_;
};

}  // namespace

void RegisterRangeFillTileKernels(KernelRegistry* r) {
  r->Register(CpuKernel("Range", {{"T", CpuArithTypes()}},
                        MakeKernel<RangeKernel>));
  r->Register(CpuKernel("Fill", {{"dtype", CpuAllTypes()}},
                        MakeKernel<FillKernel>));
  r->Register(CpuKernel("Tile", {{"T", CpuAllTypes()}},
                        MakeKernel<TileKernel>));
}

}  // namespace sluice::cpu
