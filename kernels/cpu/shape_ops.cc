// Reshape, Squeeze, Unsqueeze (the input's buffer under a new shape),
// Transpose and Expand (strided copies), each also in its Dynamic form that
// reads the shape or axes from input 1 (graph/runtime_params.h), and Shape
// and Size.
// Any dtype.
#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/runtime_params.h"
#include "graph/shape_fns.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/strided_copy.h"
#include "kernels/dynamic_params.h"
#include "kernels/launch_kernel.h"

namespace sluice::cpu {
namespace {

enum class ViewKind { kReshape, kSqueeze, kUnsqueeze };

// Ops whose output is the input's buffer with another shape. kDynamic: the
// shape (ONNX semantics, with allowzero) or axes come from input 1.
template <ViewKind kKind, bool kDynamic = false>
class ViewKernel final : public OpKernel {
 public:
  struct Attrs {
    DataType t = DT_INVALID;
    std::vector<int64_t> dims;
    std::vector<int64_t> axes;
    bool allowzero = false;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.t, node.attrs().GetType("T"));
    if constexpr (kDynamic) {
      if constexpr (kKind == ViewKind::kReshape) {
        ASSIGN_OR_RETURN(a.allowzero, node.attrs().GetBool("allowzero"));
      }
    } else if constexpr (kKind == ViewKind::kReshape) {
      ASSIGN_OR_RETURN(a.dims, node.attrs().GetIntList("shape"));
    } else {
      ASSIGN_OR_RETURN(a.axes, node.attrs().GetIntList("axes"));
    }
    return a;
  }
  ViewKernel(const Node& node, Attrs attrs)
      : OpKernel(node), attrs_(std::move(attrs)) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    const DataType t = attrs_.t;
    RETURN_IF_ERROR(CheckDtype(x, t, "input"));
    Shape shape;
    std::vector<int64_t> param;
    if constexpr (kDynamic) {
      ASSIGN_OR_RETURN(
          param, IntParamValues(ctx->input(1),
                                kKind == ViewKind::kReshape ? "shape" : "axes"));
      if constexpr (kKind == ViewKind::kReshape) {
        ASSIGN_OR_RETURN(param,
                         OnnxReshapeDims(x.shape(), param, attrs_.allowzero));
      }
    }
    if constexpr (kKind == ViewKind::kReshape) {
      const std::vector<int64_t>& dims = kDynamic ? param : attrs_.dims;
      ASSIGN_OR_RETURN(shape, ::sluice::ReshapeShape(x.shape(), dims));
    } else {
      const std::vector<int64_t>& axes = kDynamic ? param : attrs_.axes;
      if constexpr (kKind == ViewKind::kSqueeze) {
        ASSIGN_OR_RETURN(shape, ::sluice::SqueezeShape(x.shape(), axes));
      } else {
        ASSIGN_OR_RETURN(shape, ::sluice::UnsqueezeShape(x.shape(), axes));
      }
    }
    // The shape functions guarantee this; a view must never outgrow its
    // buffer, so check anyway.
    if (!shape.IsFullyDefined() || shape.num_elements() != x.NumElements()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot view ", x.shape().DebugString(), " as ",
          shape.DebugString()));
    }
    ctx->set_output(0, x.Reshaped(shape));
    return absl::OkStatus();
  }

 private:
  const Attrs attrs_;
};

class TransposeKernel final : public OpKernel {
 public:
  struct Attrs {
    DataType t = DT_INVALID;
    std::vector<int64_t> perm;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.t, node.attrs().GetType("T"));
    ASSIGN_OR_RETURN(a.perm, node.attrs().GetIntList("perm"));
    return a;
  }
  TransposeKernel(const Node& node, Attrs attrs)
      : OpKernel(node), attrs_(std::move(attrs)) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    const DataType t = attrs_.t;
    RETURN_IF_ERROR(CheckDtype(x, t, "input x"));
    std::vector<int64_t> perm = attrs_.perm;
    ASSIGN_OR_RETURN(Shape shape, ::sluice::TransposeShape(x.shape(), perm));
    const int r = x.rank();
    if (perm.empty()) {
      for (int d = r - 1; d >= 0; --d) perm.push_back(d);
    }
    const DimVector in_strides = RowMajorStrides(x.shape());
    DimVector strides(r);
    for (int d = 0; d < r; ++d) {
      const int64_t p = perm[d] < 0 ? perm[d] + r : perm[d];
      strides[d] = in_strides[p];
    }
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    return VisitBySize(t, [&](auto tag) {
      using T = typename decltype(tag)::type;
      StridedCopy<T>(*ctx, x.data<T>(), y->data<T>(), shape.dims(), strides);
      return absl::OkStatus();
    });
  }

 private:
  const Attrs attrs_;
};

// kDynamic: the shape comes from input 1.
template <bool kDynamic>
class ExpandKernel final : public OpKernel {
 public:
  struct Attrs {
    DataType t = DT_INVALID;
    std::vector<int64_t> dims;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.t, node.attrs().GetType("T"));
    if constexpr (!kDynamic) {
      ASSIGN_OR_RETURN(a.dims, node.attrs().GetIntList("shape"));
    }
    return a;
  }
  ExpandKernel(const Node& node, Attrs attrs)
      : OpKernel(node), attrs_(std::move(attrs)) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    const DataType t = attrs_.t;
    RETURN_IF_ERROR(CheckDtype(x, t, "input"));
    std::vector<int64_t> dims = attrs_.dims;
    if constexpr (kDynamic) {
      ASSIGN_OR_RETURN(dims, IntParamValues(ctx->input(1), "shape"));
    }
    ASSIGN_OR_RETURN(Shape shape, ::sluice::ExpandShape(x.shape(), dims));
    // Input strides aligned on the right; 0 where the input stretches.
    const int r = shape.rank();
    const DimVector in_strides = RowMajorStrides(x.shape());
    DimVector strides(r, 0);
    for (int d = 0; d < r; ++d) {
      const int id = d - (r - x.rank());
      if (id >= 0 && x.dim(id) != 1) {
        if (x.dim(id) != shape.dim(d)) {
          return absl::InvalidArgumentError(absl::StrCat(
              "cannot expand ", x.shape().DebugString(), " to ",
              shape.DebugString()));
        }
        strides[d] = in_strides[id];
      }
    }
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    return VisitBySize(t, [&](auto tag) {
      using T = typename decltype(tag)::type;
      StridedCopy<T>(*ctx, x.data<T>(), y->data<T>(), shape.dims(), strides);
      return absl::OkStatus();
    });
  }

 private:
  const Attrs attrs_;
};

// ONNX Shape: the input's dimensions [start, end) as int64. Reads only the
// input's shape.
class ShapeKernel final : public LaunchKernel<ShapeAttrs, ParseShapeAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    const ShapePlan p = PlanShape(attrs(), ctx->input(0).shape());
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, p.out_shape));
    std::copy(p.dims.begin(), p.dims.end(), y->data<int64_t>());
    return absl::OkStatus();
  }
};

// ONNX Size: the input's number of elements as an int64 scalar.
class SizeKernel final : public OpKernel {
 public:
  struct Attrs {};
  static absl::StatusOr<Attrs> ParseAttrs(const Node&) { return Attrs{}; }
  SizeKernel(const Node& node, Attrs) : OpKernel(node) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape({})));
    y->data<int64_t>()[0] = ctx->input(0).NumElements();
    return absl::OkStatus();
  }
};

}  // namespace

void RegisterShapeKernels(KernelRegistry* r) {
  r->Register(CpuKernel("Size", {{"T", CpuAllTypes()}},
                        MakeKernel<SizeKernel>));
  r->Register(CpuKernel("Shape", {{"T", CpuAllTypes()}},
                        MakeKernel<ShapeKernel>));
  r->Register(CpuKernel("DynamicReshape", {{"T", CpuAllTypes()}},
                        MakeKernel<ViewKernel<ViewKind::kReshape, true>>));
  r->Register(CpuKernel("DynamicSqueeze", {{"T", CpuAllTypes()}},
                        MakeKernel<ViewKernel<ViewKind::kSqueeze, true>>));
  r->Register(CpuKernel("DynamicUnsqueeze", {{"T", CpuAllTypes()}},
                        MakeKernel<ViewKernel<ViewKind::kUnsqueeze, true>>));
  r->Register(CpuKernel("DynamicExpand", {{"T", CpuAllTypes()}},
                        MakeKernel<ExpandKernel<true>>));
  r->Register(CpuKernel("Reshape", {{"T", CpuAllTypes()}},
                        MakeKernel<ViewKernel<ViewKind::kReshape>>));
  r->Register(CpuKernel("Squeeze", {{"T", CpuAllTypes()}},
                        MakeKernel<ViewKernel<ViewKind::kSqueeze>>));
  r->Register(CpuKernel("Unsqueeze", {{"T", CpuAllTypes()}},
                        MakeKernel<ViewKernel<ViewKind::kUnsqueeze>>));
  r->Register(CpuKernel("Transpose", {{"T", CpuAllTypes()}},
                        MakeKernel<TransposeKernel>));
  r->Register(CpuKernel("Expand", {{"T", CpuAllTypes()}},
                        MakeKernel<ExpandKernel<false>>));
}

}  // namespace sluice::cpu
