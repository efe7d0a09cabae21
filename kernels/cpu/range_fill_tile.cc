// Range (start, limit, delta scalars in), Fill (a runtime shape filled with
// one value: ONNX ConstantOfShape) and Tile (runtime repeats): the ops that
// build tensors from runtime parameters (docs/ops.md, "Runtime parameters").
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/tensor_proto.h"
#include "graph/runtime_params.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"

namespace sluice::cpu {
namespace {

class RangeKernel final : public OpKernel {
 public:
  struct Attrs {
    DataType t = DT_INVALID;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.t, node.attrs().GetType("T"));
    return a;
  }
  RangeKernel(const Node& node, Attrs attrs) : OpKernel(node), attrs_(attrs) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    for (int i = 0; i < 3; ++i) {
      RETURN_IF_ERROR(CheckDtype(ctx->input(i), attrs_.t, "input"));
      if (ctx->input(i).NumElements() != 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "start, limit and delta must be scalars; input ", i, " is ",
            ctx->input(i).shape().DebugString()));
      }
    }
    return VisitArith(attrs_.t, [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      using C = typename ComputeType<T>::type;
      const C start = static_cast<C>(ctx->input(0).data<T>()[0]);
      const C limit = static_cast<C>(ctx->input(1).data<T>()[0]);
      const C delta = static_cast<C>(ctx->input(2).data<T>()[0]);
      ASSIGN_OR_RETURN(int64_t n, RangeLength(static_cast<double>(start),
                                              static_cast<double>(limit),
                                              static_cast<double>(delta)));
      ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape({n})));
      T* out = y->data<T>();
      for (int64_t i = 0; i < n; ++i) {
        out[i] = static_cast<T>(start + static_cast<C>(i) * delta);
      }
      return absl::OkStatus();
    });
  }

 private:
  const Attrs attrs_;
};

class FillKernel final : public OpKernel {
 public:
  struct Attrs {
    DataType dtype = DT_INVALID;
    Tensor value;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.dtype, node.attrs().GetType("dtype"));
    const AttrValue* v = node.attrs().Find("value");
    if (v == nullptr || v->value_case() != AttrValue::kTensor) {
      return absl::InvalidArgumentError("Fill needs a tensor 'value'");
    }
    ASSIGN_OR_RETURN(a.value, TensorFromProto(v->tensor()));
    if (a.value.NumElements() != 1 || a.value.dtype() != a.dtype) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Fill's value must be one ", DataTypeName(a.dtype), " element, got ",
          DataTypeName(a.value.dtype()), a.value.shape().DebugString()));
    }
    return a;
  }
  FillKernel(const Node& node, Attrs attrs)
      : OpKernel(node), attrs_(std::move(attrs)) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                     IntParamValues(ctx->input(0), "shape"));
    for (int64_t d : dims) {
      if (d < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("shape has a negative dimension ", d));
      }
    }
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape(dims)));
    return VisitBySize(attrs_.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T v;
      std::memcpy(&v, attrs_.value.raw_data(), sizeof(T));
      T* out = static_cast<T*>(y->raw_data());
      const int64_t n = y->NumElements();
      for (int64_t i = 0; i < n; ++i) out[i] = v;
      return absl::OkStatus();
    });
  }

 private:
  const Attrs attrs_;
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
