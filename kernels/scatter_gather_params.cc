#include "kernels/scatter_gather_params.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/shape_fns.h"

namespace sluice {
namespace {

// Indices as int64, whatever their dtype.
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

// Row-major element strides of s.
std::vector<int64_t> Strides(const Shape& s) {
  std::vector<int64_t> strides(s.rank(), 1);
  for (int d = s.rank() - 2; d >= 0; --d) strides[d] = strides[d + 1] * s.dim(d + 1);
  return strides;
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

// GatherElements / ScatterElements: an offset per index position
// (row-major over the indices), p with p[axis] = indices[p].
absl::StatusOr<ScatterGatherPlan> ElementOffsets(const Shape& ds,
                                                   const Tensor& indices,
                                                   int64_t axis_attr) {
  const Shape& is = indices.shape();
  const int rank = ds.rank();
  if (is.rank() != rank || rank == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data ", ds.DebugString(), " and indices ", is.DebugString(),
        " must have the same rank (at least 1)"));
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
  const std::vector<int64_t> strides = Strides(ds);
  ScatterGatherPlan p;
  p.out_shape = is;
  p.offsets.resize(idx.size());
  std::vector<int64_t> pos(rank, 0);
  for (size_t i = 0; i < idx.size(); ++i) {
    ASSIGN_OR_RETURN(int64_t k, Wrap(idx[i], ds.dim(axis), axis));
    int64_t offset = 0;
    for (int d = 0; d < rank; ++d) {
      offset += (d == axis ? k : pos[d]) * strides[d];
    }
    p.offsets[i] = offset;
    for (int d = rank - 1; d >= 0; --d) {
      if (++pos[d] < is.dim(d)) break;
      pos[d] = 0;
    }
  }
  return p;
}

// GatherND / ScatterND: an offset per index tuple (batch_dims b: tuples
// address dims b..b+k-1 within their batch entry); out = indices.shape[:-1]
// + data.shape[b+k:].
absl::StatusOr<ScatterGatherPlan> NdOffsets(const Shape& ds,
                                              const Tensor& indices,
                                              int64_t batch_dims) {
  const Shape& is = indices.shape();
  const int b = static_cast<int>(batch_dims);
  if (is.rank() < 1 || b < 0 || b >= is.rank() || b > ds.rank()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "batch_dims ", batch_dims, " must be in [0, rank) of indices ",
        is.DebugString(), " and at most data's rank (", ds.DebugString(), ")"));
  }
  const int64_t k = is.dim(is.rank() - 1);
  if (k < 1 || b + k > ds.rank()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "indices' last dimension ", k, " does not fit data ",
        ds.DebugString()));
  }
  int64_t batch = 1, tuples = 1, batch_stride = 1;
  ScatterGatherPlan p;
  for (int d = 0; d < b; ++d) batch *= ds.dim(d);
  for (int d = b; d < is.rank() - 1; ++d) tuples *= is.dim(d);
  for (int d = b + static_cast<int>(k); d < ds.rank(); ++d) p.slice *= ds.dim(d);
  for (int d = b; d < ds.rank(); ++d) batch_stride *= ds.dim(d);
  std::vector<int64_t> out_dims(is.dims().begin(), is.dims().end() - 1);
  for (int d = b + static_cast<int>(k); d < ds.rank(); ++d) {
    out_dims.push_back(ds.dim(d));
  }
  p.out_shape = Shape(out_dims);
  ASSIGN_OR_RETURN(std::vector<int64_t> idx, IndexValues(indices));
  const std::vector<int64_t> strides = Strides(ds);
  p.offsets.resize(batch * tuples);
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t t = 0; t < tuples; ++t) {
      const int64_t j = n * tuples + t;
      int64_t offset = n * batch_stride;
      for (int64_t c = 0; c < k; ++c) {
        const int dim = b + static_cast<int>(c);
        ASSIGN_OR_RETURN(int64_t q, Wrap(idx[j * k + c], ds.dim(dim), dim));
        offset += q * strides[dim];
      }
      p.offsets[j] = offset;
    }
  }
  return p;
}

}  // namespace

absl::StatusOr<ScatterGatherAttrs> ParseScatterGatherAttrs(const Node& node) {
  ScatterGatherAttrs a;
  a.nd = absl::EndsWith(node.op(), "ND");
  a.scatter = absl::StartsWith(node.op(), "Scatter");
  if (!a.nd) {
    ASSIGN_OR_RETURN(a.axis, node.attrs().GetInt("axis"));
  } else if (!a.scatter) {
    ASSIGN_OR_RETURN(a.batch_dims, node.attrs().GetInt("batch_dims"));
  }
  if (a.scatter) {
    ASSIGN_OR_RETURN(a.reduction, ParseReduction(node));
  }
  return a;
}

absl::StatusOr<ScatterGatherPlan> PlanScatterGather(
    const ScatterGatherAttrs& a, const Tensor& data, const Tensor& indices,
    const Tensor* updates) {
  ScatterGatherPlan p;
  if (a.nd) {
    ASSIGN_OR_RETURN(p, NdOffsets(data.shape(), indices, a.batch_dims));
  } else {
    ASSIGN_OR_RETURN(p, ElementOffsets(data.shape(), indices, a.axis));
  }
  if (!a.scatter) return p;
  if (updates == nullptr) {
    return absl::InvalidArgumentError("a scatter needs its updates input");
  }
  if (updates->dtype() != data.dtype()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "updates are ", DataTypeName(updates->dtype()), " but data is ",
        DataTypeName(data.dtype())));
  }
  // The Elements ops: updates shaped like indices; ND: one slice a tuple.
  const bool fits =
      a.nd ? updates->NumElements() ==
                 static_cast<int64_t>(p.offsets.size()) * p.slice
           : updates->shape() == indices.shape();
  if (!fits) {
    return absl::InvalidArgumentError(absl::StrCat(
        "updates ", updates->shape().DebugString(), " do not match the ",
        a.nd ? absl::StrCat(p.offsets.size(), " slices of ", p.slice,
                            " elements that the indices address")
             : absl::StrCat("indices ", indices.shape().DebugString())));
  }
  p.out_shape = data.shape();
  return p;
}

}  // namespace sluice
