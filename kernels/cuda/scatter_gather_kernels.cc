// CUDA OpKernels for GatherElements, ScatterElements, GatherND and
// ScatterND. The indices are a host-memory input: the kernels check them on
// the host with the CPU kernels' rules and messages
// (kernels/cpu/scatter_gather.cc), turn them into element offsets, and copy
// those to the GPU; the GPU only moves data (scatter_gather.h). A scatter
// groups its updates by destination on the host, in the CPU's order, so
// repeated indices give the CPU's result with any reduction.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/shape_fns.h"
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/scatter_gather.h"

namespace sluice::cuda {
namespace {

// Host indices as int64, whatever their dtype.
absl::StatusOr<std::vector<int64_t>> IndexValues(const Tensor& t) {
  if (t.dtype() != DT_INT32 && t.dtype() != DT_INT64) {
    return absl::InvalidArgumentError(absl::StrCat(
        "indices must be int32 or int64, got ", DataTypeName(t.dtype())));
  }
  std::vector<int64_t> v(t.NumElements());
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    v[i] = t.dtype() == DT_INT32 ? t.data<int32_t>()[i] : t.data<int64_t>()[i];
  }
  return v;
}

absl::StatusOr<int64_t> Wrap(int64_t k, int64_t dim, int axis) {
  if (k < -dim || k >= dim) {
    return absl::InvalidArgumentError(absl::StrCat(
        "index ", k, " is out of range for axis ", axis, " of size ", dim));
  }
  return k < 0 ? k + dim : k;
}

absl::StatusOr<ScatterReduction> ParseReduction(const Node& node) {
  const AttrValue* attr = node.attrs().Find("reduction");
  const std::string r = attr == nullptr ? "none" : attr->s();
  if (r == "none") return ScatterReduction::kNone;
  if (r == "add") return ScatterReduction::kAdd;
  if (r == "mul") return ScatterReduction::kMul;
  if (r == "max") return ScatterReduction::kMax;
  if (r == "min") return ScatterReduction::kMin;
  return absl::InvalidArgumentError(
      absl::StrCat("reduction must be none, add, mul, max or min, got ", r));
}

// What the host makes of the indices: the element offset in data of each
// gathered or scattered slice, and the slices' length.
struct Offsets {
  std::vector<int64_t> offsets;
  int64_t slice = 1;
  Shape gather_shape;  // a gather's output shape
};

// GatherElements / ScatterElements: the offset in data of each index
// position (row-major over the indices), p with p[axis] = indices[p].
absl::StatusOr<Offsets> ElementOffsets(const Shape& ds, const Tensor& indices,
                                       int64_t axis_attr) {
  const Shape& is = indices.shape();
  const int rank = ds.rank();
  if (is.rank() != rank || rank == 0) {
    return absl::InvalidArgumentError(
        "data and indices must have the same rank (at least 1)");
  }
  ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_attr, rank));
  for (int d = 0; d < rank; ++d) {
    if (d != axis && is.dim(d) > ds.dim(d)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "indices ", is.DebugString(), " larger than data ",
          ds.DebugString(), " outside the axis"));
    }
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> idx, IndexValues(indices));
  const std::vector<int64_t> strides = RowMajorStrides(ds);
  Offsets o;
  o.gather_shape = is;
  o.offsets.resize(idx.size());
  std::vector<int64_t> pos(rank, 0);
  for (size_t i = 0; i < idx.size(); ++i) {
    ASSIGN_OR_RETURN(int64_t k, Wrap(idx[i], ds.dim(axis), axis));
    int64_t offset = 0;
    for (int d = 0; d < rank; ++d) {
      offset += (d == axis ? k : pos[d]) * strides[d];
    }
    o.offsets[i] = offset;
    for (int d = rank - 1; d >= 0; --d) {
      if (++pos[d] < is.dim(d)) break;
      pos[d] = 0;
    }
  }
  return o;
}

// GatherND / ScatterND: the offset in data of each index tuple's slice
// (batch_dims b: tuples address dims b..b+k-1 within their batch entry).
absl::StatusOr<Offsets> NdOffsets(const Shape& ds, const Tensor& indices,
                                  int64_t batch_dims) {
  const Shape& is = indices.shape();
  const int b = static_cast<int>(batch_dims);
  if (is.rank() < 1 || b < 0 || b >= is.rank() || b > ds.rank()) {
    return absl::InvalidArgumentError("bad indices rank or batch_dims");
  }
  const int64_t k = is.dim(is.rank() - 1);
  if (k < 1 || b + k > ds.rank()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "indices' last dimension ", k, " does not fit data ",
        ds.DebugString()));
  }
  int64_t batch = 1, tuples = 1, batch_stride = 1;
  Offsets o;
  for (int d = 0; d < b; ++d) batch *= ds.dim(d);
  for (int d = b; d < is.rank() - 1; ++d) tuples *= is.dim(d);
  for (int d = b + static_cast<int>(k); d < ds.rank(); ++d) o.slice *= ds.dim(d);
  for (int d = b; d < ds.rank(); ++d) batch_stride *= ds.dim(d);
  std::vector<int64_t> out_dims(is.dims().begin(), is.dims().end() - 1);
  for (int d = b + static_cast<int>(k); d < ds.rank(); ++d) {
    out_dims.push_back(ds.dim(d));
  }
  o.gather_shape = Shape(out_dims);
  ASSIGN_OR_RETURN(std::vector<int64_t> idx, IndexValues(indices));
  const std::vector<int64_t> strides = RowMajorStrides(ds);
  o.offsets.resize(batch * tuples);
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t t = 0; t < tuples; ++t) {
      const int64_t j = n * tuples + t;
      int64_t offset = n * batch_stride;
      for (int64_t c = 0; c < k; ++c) {
        const int dim = b + static_cast<int>(c);
        ASSIGN_OR_RETURN(int64_t p, Wrap(idx[j * k + c], ds.dim(dim), dim));
        offset += p * strides[dim];
      }
      o.offsets[j] = offset;
    }
  }
  return o;
}

// A host vector of int64s, copied to the GPU.
absl::StatusOr<Tensor> ToGpu(const GpuContext& gpu,
                             const std::vector<int64_t>& v) {
  return gpu.device->CopyToDevice(Tensor::FromVector<int64_t>(
      v, Shape({static_cast<int64_t>(v.size())})));
}

absl::Status Gather(OpKernelContext* ctx, const GpuContext& gpu,
                    const Tensor& data, const Offsets& o) {
  ASSIGN_OR_RETURN(Tensor * out,
                   ctx->allocate_output(0, o.gather_shape, data.dtype()));
  if (out->NumElements() == 0) return absl::OkStatus();
  ASSIGN_OR_RETURN(Tensor offsets, ToGpu(gpu, o.offsets));
  return LaunchGatherSlices(static_cast<int>(DataTypeSize(data.dtype())),
                            data.raw_data(), data.NumElements(),
                            offsets.data<int64_t>(), out->raw_data(),
                            static_cast<int64_t>(o.offsets.size()), o.slice,
                            gpu.stream);
}

// out = data, then each destination combined with its updates in order.
absl::Status Scatter(OpKernelContext* ctx, const GpuContext& gpu,
                     const Tensor& data, const Tensor& updates,
                     const Offsets& o, ScatterReduction reduction) {
  ASSIGN_OR_RETURN(Tensor * out,
                   ctx->allocate_output(0, data.shape(), data.dtype()));
  const size_t bytes = data.NumElements() * DataTypeSize(data.dtype());
  if (bytes == 0) return absl::OkStatus();
  RETURN_IF_ERROR(CudaStatus(
      cudaMemcpyAsync(out->raw_data(), data.raw_data(), bytes,
                      cudaMemcpyDeviceToDevice, gpu.stream),
      "copying the scatter's data"));
  const int64_t n = static_cast<int64_t>(o.offsets.size());
  if (n == 0 || o.slice == 0) return absl::OkStatus();
  // Update numbers by destination; stable, so each keeps the CPU's order.
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return o.offsets[a] < o.offsets[b];
  });
  // One buffer: dest (num_dests), start (num_dests + 1), order (n).
  std::vector<int64_t> dest, start;
  for (int64_t j = 0; j < n; ++j) {
    if (j == 0 || o.offsets[order[j]] != o.offsets[order[j - 1]]) {
      dest.push_back(o.offsets[order[j]]);
      start.push_back(j);
    }
  }
  start.push_back(n);
  const int64_t num_dests = static_cast<int64_t>(dest.size());
  std::vector<int64_t> packed = dest;
  packed.insert(packed.end(), start.begin(), start.end());
  packed.insert(packed.end(), order.begin(), order.end());
  ASSIGN_OR_RETURN(Tensor plan_buffer, ToGpu(gpu, packed));
  const int64_t* p = plan_buffer.data<int64_t>();
  ScatterPlan plan{p, p + num_dests, p + 2 * num_dests + 1, num_dests};
  return LaunchScatterSlices(reduction, ToGpuDtype(data.dtype()),
                             out->raw_data(), out->NumElements(),
                             updates.raw_data(), plan, o.slice, gpu.stream);
}

template <bool kScatter>
class ElementsKernel final : public OpKernel {
 public:
  struct Attrs {
    int64_t axis = 0;
    ScatterReduction reduction = ScatterReduction::kNone;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.axis, node.attrs().GetInt("axis"));
    if constexpr (kScatter) {
      ASSIGN_OR_RETURN(a.reduction, ParseReduction(node));
    }
    return a;
  }
  ElementsKernel(const Node& node, Attrs attrs)
      : OpKernel(node), attrs_(attrs) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, /*host_inputs=*/{1}));
    const Tensor& data = ctx->input(0);
    const Tensor& indices = ctx->input(1);
    ASSIGN_OR_RETURN(Offsets o,
                     ElementOffsets(data.shape(), indices, attrs_.axis));
    if constexpr (!kScatter) {
      return Gather(ctx, gpu, data, o);
    } else {
      const Tensor& updates = ctx->input(2);
      if (updates.shape() != indices.shape()) {
        return absl::InvalidArgumentError("updates must be shaped like indices");
      }
      if (updates.dtype() != data.dtype()) {
        return absl::InvalidArgumentError("updates and data differ in dtype");
      }
      return Scatter(ctx, gpu, data, updates, o, attrs_.reduction);
    }
  }

 private:
  const Attrs attrs_;
};

template <bool kScatter>
class NdKernel final : public OpKernel {
 public:
  struct Attrs {
    int64_t batch_dims = 0;
    ScatterReduction reduction = ScatterReduction::kNone;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    if constexpr (kScatter) {
      ASSIGN_OR_RETURN(a.reduction, ParseReduction(node));
    } else {
      ASSIGN_OR_RETURN(a.batch_dims, node.attrs().GetInt("batch_dims"));
    }
    return a;
  }
  NdKernel(const Node& node, Attrs attrs) : OpKernel(node), attrs_(attrs) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, /*host_inputs=*/{1}));
    const Tensor& data = ctx->input(0);
    ASSIGN_OR_RETURN(Offsets o,
                     NdOffsets(data.shape(), ctx->input(1), attrs_.batch_dims));
    if constexpr (!kScatter) {
      return Gather(ctx, gpu, data, o);
    } else {
      const Tensor& updates = ctx->input(2);
      if (updates.NumElements() !=
          static_cast<int64_t>(o.offsets.size()) * o.slice) {
        return absl::InvalidArgumentError("updates do not match the indices");
      }
      if (updates.dtype() != data.dtype()) {
        return absl::InvalidArgumentError("updates and data differ in dtype");
      }
      return Scatter(ctx, gpu, data, updates, o, attrs_.reduction);
    }
  }

 private:
  const Attrs attrs_;
};

}  // namespace

void RegisterScatterGatherKernels(KernelRegistry* registry) {
  // The CPU kernels' dtypes: floats, int32, int64 and bool.
  const std::vector<DataType> types =
      GpuTypesWhere(HasScatterKernel, GpuAllTypes());
  const std::vector<DataType> index = {DT_INT32, DT_INT64};
  RegisterGpu(registry, "GatherElements", {{"T", types}, {"Tindices", index}},
              MakeKernel<ElementsKernel<false>>, /*host_memory_inputs=*/{1});
  RegisterGpu(registry, "ScatterElements", {{"T", types}, {"Tindices", index}},
              MakeKernel<ElementsKernel<true>>, /*host_memory_inputs=*/{1});
  RegisterGpu(registry, "GatherND", {{"T", types}}, MakeKernel<NdKernel<false>>,
              /*host_memory_inputs=*/{1});
  RegisterGpu(registry, "ScatterND", {{"T", types}}, MakeKernel<NdKernel<true>>,
              /*host_memory_inputs=*/{1});
}

}  // namespace sluice::cuda
