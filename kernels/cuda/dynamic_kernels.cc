// CUDA OpKernels for the runtime-parameter ops (docs/ops.md, "Runtime
// parameters"): Shape and Size (their int64 results written by a launch),
// DynamicReshape / DynamicSqueeze / DynamicUnsqueeze (the input's buffer,
// reshaped), DynamicSlice, DynamicExpand and Tile (strided copies), Fill
// and Range. Their parameter inputs arrive in host memory
// (host_memory_inputs), where the shapes are computed as on the CPU.
#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/tensor_proto.h"
#include "graph/runtime_params.h"
#include "graph/shape_fns.h"
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/fill.h"
#include "kernels/cuda/shape_copy.h"

namespace sluice::cuda {
namespace {

class ShapeKernel final : public OpKernel {
 public:
  struct Attrs {
    int64_t start = 0;
    int64_t end = 0;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.start, node.attrs().GetInt("start"));
    ASSIGN_OR_RETURN(a.end, node.attrs().GetInt("end"));
    return a;
  }
  ShapeKernel(const Node& node, Attrs attrs) : OpKernel(node), attrs_(attrs) {}

  // The dims are passed to the kernel by value: at most kMaxSmallInt64s.
  static absl::Status Supports(const Node& node) {
    const Shape& x = node.input_shape(0);
    if (!x.unknown_rank() && x.rank() > kMaxSmallInt64s) {
      return absl::UnimplementedError(absl::StrCat(
          "Shape of rank ", x.rank(), " > ", kMaxSmallInt64s, " on the GPU"));
    }
    return absl::OkStatus();
  }

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    const Tensor& x = ctx->input(0);
    int64_t begin = 0, end = 0;
    ShapeSliceBounds(x.rank(), attrs_.start, attrs_.end, &begin, &end);
    if (end - begin > kMaxSmallInt64s) {
      return absl::UnimplementedError(
          absl::StrCat("Shape of rank ", x.rank(), " on the GPU"));
    }
    SmallInt64s dims;
    dims.count = static_cast<int>(end - begin);
    for (int64_t d = begin; d < end; ++d) {
      dims.values[d - begin] = x.dim(static_cast<int>(d));
    }
    ASSIGN_OR_RETURN(Tensor * y,
                     ctx->allocate_output(0, Shape({end - begin}), DT_INT64));
    return LaunchWriteInt64s(y->data<int64_t>(), dims, gpu.stream);
  }

 private:
  const Attrs attrs_;
};

class SizeKernel final : public OpKernel {
 public:
  struct Attrs {};
  static absl::StatusOr<Attrs> ParseAttrs(const Node&) { return Attrs{}; }
  SizeKernel(const Node& node, Attrs) : OpKernel(node) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    SmallInt64s n;
    n.count = 1;
    n.values[0] = ctx->input(0).NumElements();
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape({}), DT_INT64));
    return LaunchWriteInt64s(y->data<int64_t>(), n, gpu.stream);
  }
};

// DynamicReshape (ONNX rules, allowzero), DynamicSqueeze, DynamicUnsqueeze.
class DynamicViewKernel final : public OpKernel {
 public:
  struct Attrs {
    bool allowzero = false;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    if (node.op() == "DynamicReshape") {
      ASSIGN_OR_RETURN(a.allowzero, node.attrs().GetBool("allowzero"));
    }
    return a;
  }
  DynamicViewKernel(const Node& node, Attrs attrs)
      : OpKernel(node), attrs_(attrs) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, {1}));
    const Tensor& x = ctx->input(0);
    const std::string& op = node().op();
    ASSIGN_OR_RETURN(
        std::vector<int64_t> param,
        IntParamValues(ctx->input(1), op == "DynamicReshape" ? "shape" : "axes"));
    Shape out;
    if (op == "DynamicReshape") {
      ASSIGN_OR_RETURN(param, OnnxReshapeDims(x.shape(), param, attrs_.allowzero));
      ASSIGN_OR_RETURN(out, ReshapeShape(x.shape(), param));
    } else if (op == "DynamicSqueeze") {
      ASSIGN_OR_RETURN(out, SqueezeShape(x.shape(), param));
    } else {
      ASSIGN_OR_RETURN(out, UnsqueezeShape(x.shape(), param));
    }
    if (!out.IsFullyDefined() || out.num_elements() != x.NumElements()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot view ", x.shape().DebugString(), " as ", out.DebugString()));
    }
    ctx->set_output(0, x.Reshaped(out));
    return absl::OkStatus();
  }

 private:
  const Attrs attrs_;
};

class DynamicSliceKernel final : public OpKernel {
 public:
  struct Attrs {};
  static absl::StatusOr<Attrs> ParseAttrs(const Node&) { return Attrs{}; }
  DynamicSliceKernel(const Node& node, Attrs) : OpKernel(node) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, {1, 2, 3, 4}));
    ASSIGN_OR_RETURN(std::vector<int64_t> begin,
                     IntParamValues(ctx->input(1), "starts"));
    ASSIGN_OR_RETURN(std::vector<int64_t> end,
                     IntParamValues(ctx->input(2), "ends"));
    ASSIGN_OR_RETURN(std::vector<int64_t> axes,
                     IntParamValues(ctx->input(3), "axes"));
    ASSIGN_OR_RETURN(std::vector<int64_t> steps,
                     IntParamValues(ctx->input(4), "steps"));
    return SliceInto(ctx, gpu, ctx->input(0), begin, end, std::move(axes),
                     std::move(steps));
  }
};

// DynamicExpand and Tile: a strided copy driven by input 1.
template <bool kTile>
class ParamCopyKernel final : public OpKernel {
 public:
  struct Attrs {};
  static absl::StatusOr<Attrs> ParseAttrs(const Node&) { return Attrs{}; }
  ParamCopyKernel(const Node& node, Attrs) : OpKernel(node) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, {1}));
    ASSIGN_OR_RETURN(std::vector<int64_t> param,
                     IntParamValues(ctx->input(1), kTile ? "repeats" : "shape"));
    if constexpr (kTile) return TileInto(ctx, gpu, ctx->input(0), param);
    return ExpandInto(ctx, gpu, ctx->input(0), param);
  }
};

class FillKernel final : public OpKernel {
 public:
  struct Attrs {
    DataType dtype = DT_INVALID;
    uint64_t bits = 0;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.dtype, node.attrs().GetType("dtype"));
    const AttrValue* v = node.attrs().Find("value");
    if (v == nullptr || v->value_case() != AttrValue::kTensor) {
      return absl::InvalidArgumentError("Fill needs a tensor 'value'");
    }
    ASSIGN_OR_RETURN(Tensor value, TensorFromProto(v->tensor()));
    if (value.NumElements() != 1 || value.dtype() != a.dtype ||
        DataTypeSize(a.dtype) > sizeof(a.bits)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Fill's value must be one ", DataTypeName(a.dtype), " element"));
    }
    std::memcpy(&a.bits, value.raw_data(), DataTypeSize(a.dtype));
    return a;
  }
  FillKernel(const Node& node, Attrs attrs) : OpKernel(node), attrs_(attrs) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, {0}));
    ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                     IntParamValues(ctx->input(0), "shape"));
    for (int64_t d : dims) {
      if (d < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("shape has a negative dimension ", d));
      }
    }
    ASSIGN_OR_RETURN(Tensor * y,
                     ctx->allocate_output(0, Shape(dims), attrs_.dtype));
    return LaunchFillBits(y->raw_data(), y->NumElements(),
                          static_cast<int>(DataTypeSize(attrs_.dtype)),
                          attrs_.bits, gpu.stream);
  }

 private:
  const Attrs attrs_;
};

// A host scalar as double and as int64.
template <typename T>
void ScalarOf(const Tensor& t, double* d, int64_t* i) {
  const T v = t.data<T>()[0];
  *d = static_cast<double>(v);
  *i = static_cast<int64_t>(v);
}

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
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, {0, 1, 2}));
    double v[3];
    int64_t iv[3];
    for (int k = 0; k < 3; ++k) {
      const Tensor& t = ctx->input(k);
      if (t.NumElements() != 1 || t.dtype() != attrs_.t) {
        return absl::InvalidArgumentError(absl::StrCat(
            "start, limit and delta must be ", DataTypeName(attrs_.t),
            " scalars; input ", k, " is ", DataTypeName(t.dtype()),
            t.shape().DebugString()));
      }
      switch (attrs_.t) {
        case DT_FLOAT: ScalarOf<float>(t, &v[k], &iv[k]); break;
        case DT_DOUBLE: ScalarOf<double>(t, &v[k], &iv[k]); break;
        case DT_INT32: ScalarOf<int32_t>(t, &v[k], &iv[k]); break;
        case DT_INT64: ScalarOf<int64_t>(t, &v[k], &iv[k]); break;
        default:
          return absl::UnimplementedError(absl::StrCat(
              "Range of ", DataTypeName(attrs_.t), " on the GPU"));
      }
    }
    ASSIGN_OR_RETURN(int64_t n, RangeLength(v[0], v[1], v[2]));
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape({n}), attrs_.t));
    return LaunchRange(ToGpuDtype(attrs_.t), y->raw_data(), n, v[0], v[2],
                       iv[0], iv[2], gpu.stream);
  }

 private:
  const Attrs attrs_;
};

}  // namespace

void RegisterDynamicKernels(KernelRegistry* registry) {
  RegisterGpu(registry, "Shape", {{"T", GpuAllTypes()}},
              MakeKernel<ShapeKernel>, {}, ShapeKernel::Supports);
  RegisterGpu(registry, "Size", {{"T", GpuAllTypes()}},
              MakeKernel<SizeKernel>);
  for (const char* op :
       {"DynamicReshape", "DynamicSqueeze", "DynamicUnsqueeze"}) {
    RegisterGpu(registry, op, {{"T", GpuAllTypes()}},
                MakeKernel<DynamicViewKernel>, /*host_memory_inputs=*/{1});
  }
  RegisterGpu(registry, "DynamicSlice", {{"T", GpuAllTypes()}},
              MakeKernel<DynamicSliceKernel>, {1, 2, 3, 4},
              RanksAtMost(kMaxGpuDims));
  RegisterGpu(registry, "DynamicExpand", {{"T", GpuAllTypes()}},
              MakeKernel<ParamCopyKernel<false>>, {1},
              RanksAtMost(kMaxGpuDims));
  // Tile iterates [repeats, dim] pairs: twice the rank before merging.
  RegisterGpu(registry, "Tile", {{"T", GpuAllTypes()}},
              MakeKernel<ParamCopyKernel<true>>, {1},
              RanksAtMost(kMaxGpuDims / 2));
  RegisterGpu(registry, "Fill", {{"dtype", GpuAllTypes()}},
              MakeKernel<FillKernel>, {0});
  RegisterGpu(registry, "Range",
              {{"T", {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64}}},
              MakeKernel<RangeKernel>, {0, 1, 2});
}

}  // namespace sluice::cuda
