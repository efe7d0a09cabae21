// Schemas of the selection ops (docs/ops.md, "Selection"): TopK, Unique,
// NonZero, Compress, OneHot, EyeLike and ReverseSequence. Those whose output
// size depends on the data (Unique, NonZero, Compress, and TopK or OneHot
// when k or depth is computed at run time) leave that dimension unknown
// (-1); their kernels size the outputs at run time.
#include <algorithm>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/dtype.h"
#include "core/status_macros.h"
#include "graph/op_registry.h"
#include "graph/runtime_params.h"
#include "graph/shape_fns.h"

namespace sluice {
namespace {

// The numeric dtypes and bool.
std::vector<DataType> NumericAndBool() {
  std::vector<DataType> t = kNumericTypes;
  t.push_back(DT_BOOL);
  return t;
}

// The single value of scalar input `i` when known at load time.
absl::StatusOr<std::optional<int64_t>> KnownScalar(InferenceContext& c, int i,
                                                   absl::string_view what) {
  const Tensor* v = c.input_value(i);
  if (v == nullptr) return std::nullopt;
  ASSIGN_OR_RETURN(std::vector<int64_t> values, IntParamValues(*v, what));
  if (values.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must hold one value, got ", values.size()));
  }
  return values[0];
}

// `in` with dimension `axis` replaced by `dim`; unknown rank stays unknown.
absl::StatusOr<Shape> WithDim(const Shape& in, int64_t axis, int64_t dim) {
  if (in.unknown_rank()) return Shape::UnknownRank();
  ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, in.rank()));
  std::vector<int64_t> dims(in.dims().begin(), in.dims().end());
  dims[a] = dim;
  return Shape(dims);
}

absl::Status TopKFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(int64_t axis, c.attrs().GetInt("axis"));
  ASSIGN_OR_RETURN(std::optional<int64_t> k, KnownScalar(c, 1, "k"));
  const Shape& in = c.input_shape(0);
  if (k && *k < 0) {
    return absl::InvalidArgumentError(absl::StrCat("k must be >= 0, got ", *k));
  }
  if (k && !in.unknown_rank()) {
    ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, in.rank()));
    if (in.dim(a) >= 0 && *k > in.dim(a)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "k = ", *k, " is larger than axis ", a, " of ", in.DebugString()));
    }
  }
  ASSIGN_OR_RETURN(Shape out, WithDim(in, axis, k.value_or(kUnknownDim)));
  c.set_output_shape(0, out);
  c.set_output_shape(1, out);
  return absl::OkStatus();
}

absl::Status UniqueFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(bool flatten, c.attrs().GetBool("flatten"));
  ASSIGN_OR_RETURN(int64_t axis, c.attrs().GetInt("axis"));
  const Shape& in = c.input_shape(0);
  const Shape unknown({kUnknownDim});
  if (flatten) {
    c.set_output_shape(0, unknown);
    const int64_t n = in.unknown_rank() ? kUnknownDim : in.num_elements();
    c.set_output_shape(2, Shape({n < 0 ? kUnknownDim : n}));
  } else {
    ASSIGN_OR_RETURN(Shape y, WithDim(in, axis, kUnknownDim));
    c.set_output_shape(0, y);
    int64_t n = kUnknownDim;
    if (!in.unknown_rank()) {
      ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, in.rank()));
      n = in.dim(a);
    }
    c.set_output_shape(2, Shape({n}));
  }
  c.set_output_shape(1, unknown);
  c.set_output_shape(3, unknown);
  return absl::OkStatus();
}

// A scalar counts as one element of rank 1 ([1, count]), as NumPy and
// onnxruntime have it.
absl::Status NonZeroFn(InferenceContext& c) {
  const Shape& in = c.input_shape(0);
  c.set_output_shape(
      0, Shape({in.unknown_rank() ? kUnknownDim : std::max(in.rank(), 1),
                kUnknownDim}));
  return absl::OkStatus();
}

absl::Status CompressFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(bool flatten, c.attrs().GetBool("flatten"));
  ASSIGN_OR_RETURN(int64_t axis, c.attrs().GetInt("axis"));
  const Shape& cond = c.input_shape(1);
  if (!cond.unknown_rank() && cond.rank() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "condition must have rank 1, got ", cond.DebugString()));
  }
  if (flatten) {
    c.set_output_shape(0, Shape({kUnknownDim}));
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(Shape out, WithDim(c.input_shape(0), axis, kUnknownDim));
  c.set_output_shape(0, out);
  return absl::OkStatus();
}

absl::Status OneHotFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(int64_t axis, c.attrs().GetInt("axis"));
  std::optional<int64_t> depth;
  if (const Tensor* d = c.input_value(1); d != nullptr) {
    if (d->NumElements() != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "depth must hold one value, got shape ", d->shape().DebugString()));
    }
    double v = 0;
    SLUICE_SWITCH_DTYPE(d->dtype(), {
      if constexpr (std::is_arithmetic_v<T>) {
        v = static_cast<double>(d->data<T>()[0]);
      } else if constexpr (std::is_same_v<T, half> ||
                           std::is_same_v<T, bfloat16>) {
        v = static_cast<float>(d->data<T>()[0]);
      }
    }, {});
    if (v < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("depth must be >= 1, got ", v));
    }
    depth = static_cast<int64_t>(v);
  }
  const Shape& in = c.input_shape(0);
  if (in.unknown_rank()) {
    c.set_output_shape(0, Shape::UnknownRank());
    return absl::OkStatus();
  }
  const int rank = in.rank() + 1;
  if (axis < -rank || axis >= rank) {
    return absl::InvalidArgumentError(absl::StrCat(
        "axis ", axis, " is out of range for an output of rank ", rank));
  }
  if (axis < 0) axis += rank;
  std::vector<int64_t> dims(in.dims().begin(), in.dims().end());
  dims.insert(dims.begin() + axis, depth.value_or(kUnknownDim));
  c.set_output_shape(0, Shape(dims));
  const Shape& values = c.input_shape(2);
  if (!values.unknown_rank() && values.num_elements() >= 0 &&
      values.num_elements() != 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "values must hold [off_value, on_value], got shape ",
        values.DebugString()));
  }
  return absl::OkStatus();
}

absl::Status EyeLikeFn(InferenceContext& c) {
  const Shape& in = c.input_shape(0);
  if (!in.unknown_rank() && in.rank() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("EyeLike needs a 2-D input, got ", in.DebugString()));
  }
  return UnchangedShapeFn(c);
}

absl::Status ReverseSequenceFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(int64_t batch_axis, c.attrs().GetInt("batch_axis"));
  ASSIGN_OR_RETURN(int64_t time_axis, c.attrs().GetInt("time_axis"));
  if (!((batch_axis == 0 && time_axis == 1) ||
        (batch_axis == 1 && time_axis == 0))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "batch_axis and time_axis must be 0 and 1 in some order, got ",
        batch_axis, " and ", time_axis));
  }
  const Shape& in = c.input_shape(0);
  if (!in.unknown_rank() && in.rank() < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ReverseSequence needs rank >= 2, got ", in.DebugString()));
  }
  return UnchangedShapeFn(c);
}

}  // namespace

void RegisterSelectOps(OpRegistry* r) {
  RegisterOrDie(
      r, OpDefBuilder("TopK")
             .Input("x", "T")
             .Input("k", "int64")
             .Output("values", "T")
             .Output("indices", "int64")
             .TypeAttr("T", kNumericTypes)
             .Attr("axis", AttrType::kInt, MakeIntAttr(-1))
             .Attr("largest", AttrType::kBool, MakeBoolAttr(true))
             .Attr("sorted", AttrType::kBool, MakeBoolAttr(true))
             .ShapeFn(TopKFn)
             .Doc("The k (a scalar or [1] input) largest (or smallest) "
                  "elements along axis, sorted, and their int64 indices; "
                  "equal values in index order. NaN counts as the largest.")
             .Build());
  RegisterOrDie(
      r, OpDefBuilder("Unique")
             .Input("x", "T")
             .Output("y", "T")
             .Output("indices", "int64")
             .Output("inverse_indices", "int64")
             .Output("counts", "int64")
             .TypeAttr("T", NumericAndBool())
             .Attr("flatten", AttrType::kBool, MakeBoolAttr(true))
             .Attr("axis", AttrType::kInt, MakeIntAttr(0))
             .Attr("sorted", AttrType::kBool, MakeBoolAttr(true))
             .ShapeFn(UniqueFn)
             .Doc("The distinct elements of x flattened (or distinct slices "
                  "along axis unless flatten), ascending (or in order of "
                  "first occurrence unless sorted); the index of each one's "
                  "first occurrence, each element's index in y, and counts.")
             .Build());
  RegisterOrDie(r, OpDefBuilder("NonZero")
                       .Input("x", "T")
                       .Output("y", "int64")
                       .TypeAttr("T", NumericAndBool())
                       .ShapeFn(NonZeroFn)
                       .Doc("The indices of the nonzero elements of x, as "
                            "[rank, count] int64, in row-major order (a "
                            "scalar as [1, count]).")
                       .Build());
  RegisterOrDie(
      r, OpDefBuilder("Compress")
             .Input("x", "T")
             .Input("condition", "bool")
             .Output("y", "T")
             .TypeAttr("T", kAllTypes)
             .Attr("flatten", AttrType::kBool, MakeBoolAttr(true))
             .Attr("axis", AttrType::kInt, MakeIntAttr(0))
             .ShapeFn(CompressFn)
             .Doc("The slices of x along axis (of x flattened when flatten) "
                  "whose entry of the 1-D condition is true; a shorter "
                  "condition leaves out the rest.")
             .Build());
  RegisterOrDie(
      r, OpDefBuilder("OneHot")
             .Input("indices", "TI")
             .Input("depth", "TD")
             .Input("values", "T")
             .Output("y", "T")
             .TypeAttr("TI", kNumericTypes)
             .TypeAttr("TD", kNumericTypes)
             .TypeAttr("T", kAllTypes)
             .Attr("axis", AttrType::kInt, MakeIntAttr(-1))
             .ShapeFn(OneHotFn)
             .Doc("values[1] where the new dimension at axis (of size depth, "
                  "a scalar input) equals the index, values[0] elsewhere; "
                  "negative indices count from depth, others out of range "
                  "give a row of values[0].")
             .Build());
  RegisterOrDie(r, OpDefBuilder("EyeLike")
                       .Input("x", "SrcT")
                       .Output("y", "DstT")
                       .TypeAttr("SrcT", kAllTypes)
                       .TypeAttr("DstT", kAllTypes)
                       .Attr("k", AttrType::kInt, MakeIntAttr(0))
                       .ShapeFn(EyeLikeFn)
                       .Doc("A 2-D tensor of x's shape with ones on diagonal "
                            "k (above the main one when k > 0), zeros "
                            "elsewhere.")
                       .Build());
  RegisterOrDie(
      r, OpDefBuilder("ReverseSequence")
             .Input("x", "T")
             .Input("sequence_lens", "int64")
             .Output("y", "T")
             .TypeAttr("T", kAllTypes)
             .Attr("batch_axis", AttrType::kInt, MakeIntAttr(1))
             .Attr("time_axis", AttrType::kInt, MakeIntAttr(0))
             .ShapeFn(ReverseSequenceFn)
             .Doc("For each batch entry b, the first sequence_lens[b] steps "
                  "along time_axis reversed, the rest copied.")
             .Build());
}

}  // namespace sluice
