// Element and N-d gathers and scatters with runtime indices (ONNX's
// GatherElements, ScatterElements, GatherND, ScatterND). Indices are int32
// or int64, may be negative (counted from the end) and are checked: an
// index out of range is an error naming it, never a read or write outside
// a buffer. Scatters copy the data, then write each update in index order,
// replacing it or combining with reduction add, mul, max or min.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/shape_fns.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"

namespace sluice::cpu {
namespace {

// Indices as int64, whatever their dtype.
std::vector<int64_t> IndexValues(const Tensor& t) {
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

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

absl::StatusOr<Reduction> ParseReduction(const Node& node) {
  const AttrValue* attr = node.attrs().Find("reduction");
  const std::string r = attr == nullptr ? "none" : attr->s();
  if (r == "none") return Reduction::kNone;
  if (r == "add") return Reduction::kAdd;
  if (r == "mul") return Reduction::kMul;
  if (r == "max") return Reduction::kMax;
  if (r == "min") return Reduction::kMin;
  return absl::InvalidArgumentError(
      absl::StrCat("reduction must be none, add, mul, max or min, got ", r));
}

template <typename T>
void Combine(T* dst, const T& src, Reduction r) {
  using C = typename ComputeType<T>::type;
  switch (r) {
    case Reduction::kNone: *dst = src; break;
    case Reduction::kAdd: *dst = static_cast<T>(C(*dst) + C(src)); break;
    case Reduction::kMul: *dst = static_cast<T>(C(*dst) * C(src)); break;
    case Reduction::kMax: if (C(src) > C(*dst)) *dst = src; break;
    case Reduction::kMin: if (C(src) < C(*dst)) *dst = src; break;
  }
}

// out[p] = data[p with p[axis] = indices[p]], out shaped like indices.
// ScatterElements: out = data; out[p with p[axis] = indices[p]] op= updates[p].
template <bool kScatter>
class ElementsKernel final : public OpKernel {
 public:
  struct Attrs {
    int64_t axis = 0;
    Reduction reduction = Reduction::kNone;
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
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& data = ctx->input(0);
    const Tensor& indices = ctx->input(1);
    const int rank = data.shape().rank();
    if (indices.shape().rank() != rank || rank == 0) {
      return absl::InvalidArgumentError(
          "data and indices must have the same rank (at least 1)");
    }
    ASSIGN_OR_RETURN(int axis, NormalizeAxis(attrs_.axis, rank));
    for (int d = 0; d < rank; ++d) {
      if (d != axis && indices.shape().dim(d) > data.shape().dim(d)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "indices ", indices.shape().DebugString(), " larger than data ",
            data.shape().DebugString(), " outside the axis"));
      }
    }
    const Tensor* updates = nullptr;
    if constexpr (kScatter) {
      updates = &ctx->input(2);
      if (updates->shape() != indices.shape()) {
        return absl::InvalidArgumentError("updates must be shaped like indices");
      }
    }
    ASSIGN_OR_RETURN(Tensor * out,
                     ctx->allocate_output(0, kScatter ? data.shape()
                                                      : indices.shape()));
    if constexpr (kScatter) {
      std::memcpy(out->raw_data(), data.raw_data(),
                  data.NumElements() * DataTypeSize(data.dtype()));
    }
    const std::vector<int64_t> idx = IndexValues(indices);
    const DimVector strides = RowMajorStrides(data.shape());
    return VisitComparable(data.dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      const T* src = data.data<T>();
      T* dst = out->data<T>();
      std::vector<int64_t> pos(rank, 0);
      for (size_t i = 0; i < idx.size(); ++i) {
        ASSIGN_OR_RETURN(int64_t k, Wrap(idx[i], data.shape().dim(axis), axis));
        int64_t offset = 0;
        for (int d = 0; d < rank; ++d) {
          offset += (d == axis ? k : pos[d]) * strides[d];
        }
        if constexpr (kScatter) {
          Combine(dst + offset, updates->data<T>()[i], attrs_.reduction);
        } else {
          dst[i] = src[offset];
        }
        for (int d = rank - 1; d >= 0; --d) {
          if (++pos[d] < indices.shape().dim(d)) break;
          pos[d] = 0;
        }
      }
      return absl::OkStatus();
    });
  }

 private:
  const Attrs attrs_;
};

// GatherND (batch_dims b): indices [..., k] address data's dims b..b+k-1
// within batch; out = indices.shape[:-1] + data.shape[b+k:].
// ScatterND (b = 0): out = data; out[indices[j]] op= updates[j].
template <bool kScatter>
class NdKernel final : public OpKernel {
 public:
  struct Attrs {
    int64_t batch_dims = 0;
    Reduction reduction = Reduction::kNone;
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
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& data = ctx->input(0);
    const Tensor& indices = ctx->input(1);
    const Shape& ds = data.shape();
    const Shape& is = indices.shape();
    const int b = static_cast<int>(attrs_.batch_dims);
    if (is.rank() < 1 || b < 0 || b >= is.rank() || b > ds.rank()) {
      return absl::InvalidArgumentError("bad indices rank or batch_dims");
    }
    const int64_t k = is.dim(is.rank() - 1);
    if (k < 1 || b + k > ds.rank()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "indices' last dimension ", k, " does not fit data ",
          ds.DebugString()));
    }
    int64_t batch = 1, tuples = 1, slice = 1;
    for (int d = 0; d < b; ++d) batch *= ds.dim(d);
    for (int d = b; d < is.rank() - 1; ++d) tuples *= is.dim(d);
    for (int d = b + static_cast<int>(k); d < ds.rank(); ++d) {
      slice *= ds.dim(d);
    }
    int64_t batch_stride = 1;  // elements of data per batch entry
    for (int d = b; d < ds.rank(); ++d) batch_stride *= ds.dim(d);
    const DimVector strides = RowMajorStrides(ds);
    std::vector<int64_t> out_dims(is.dims().begin(), is.dims().end() - 1);
    for (int d = b + static_cast<int>(k); d < ds.rank(); ++d) {
      out_dims.push_back(ds.dim(d));
    }
    const Tensor* updates = nullptr;
    if constexpr (kScatter) {
      updates = &ctx->input(2);
      if (updates->NumElements() != batch * tuples * slice) {
        return absl::InvalidArgumentError("updates do not match the indices");
      }
    }
    ASSIGN_OR_RETURN(Tensor * out,
                     ctx->allocate_output(0, kScatter ? ds : Shape(out_dims)));
    const size_t size = DataTypeSize(data.dtype());
    if constexpr (kScatter) {
      std::memcpy(out->raw_data(), data.raw_data(), data.NumElements() * size);
    }
    const std::vector<int64_t> idx = IndexValues(indices);
    return VisitComparable(data.dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      const T* src = data.data<T>();
      T* dst = out->data<T>();
      for (int64_t n = 0; n < batch; ++n) {
        for (int64_t t = 0; t < tuples; ++t) {
          const int64_t j = n * tuples + t;  // the index tuple
          int64_t offset = n * batch_stride;
          for (int64_t c = 0; c < k; ++c) {
            const int dim = b + static_cast<int>(c);
            ASSIGN_OR_RETURN(int64_t p, Wrap(idx[j * k + c], ds.dim(dim), dim));
            offset += p * strides[dim];
          }
          for (int64_t e = 0; e < slice; ++e) {
            if constexpr (kScatter) {
              Combine(dst + offset + e, updates->data<T>()[j * slice + e],
                      attrs_.reduction);
            } else {
              dst[j * slice + e] = src[offset + e];
            }
          }
        }
      }
      return absl::OkStatus();
    });
  }

 private:
  const Attrs attrs_;
};

}  // namespace

void RegisterScatterGatherKernels(KernelRegistry* r) {
  const std::vector<DataType> index = {DT_INT32, DT_INT64};
  r->Register(CpuKernel("GatherElements",
                        {{"T", CpuComparisonTypes()}, {"Tindices", index}},
                        MakeKernel<ElementsKernel<false>>));
  r->Register(CpuKernel("ScatterElements",
                        {{"T", CpuComparisonTypes()}, {"Tindices", index}},
                        MakeKernel<ElementsKernel<true>>));
  r->Register(CpuKernel("GatherND", {{"T", CpuComparisonTypes()}},
                        MakeKernel<NdKernel<false>>));
  r->Register(CpuKernel("ScatterND", {{"T", CpuComparisonTypes()}},
                        MakeKernel<NdKernel<true>>));
}

}  // namespace sluice::cpu
