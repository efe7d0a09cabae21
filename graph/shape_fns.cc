// Shape arithmetic for the op schemas and kernels. Numbers come from files,
// so every sum and product is checked against kMaxElements.
#include "graph/shape_fns.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "graph/op_def.h"

namespace sluice {
namespace {

using Int128 = __int128;

bool Known(int64_t d) { return d >= 0; }

// The single dimension two partial dimensions agree on; error when both are
// known and differ. `what` names them for the message.
absl::StatusOr<int64_t> MergeDim(int64_t a, int64_t b, const std::string& what) {
  if (!Known(a)) return b;
  if (!Known(b)) return a;
  if (a != b) {
    return Invalid(absl::StrCat(what, ": ", a, " vs ", b));
  }
  return a;
}

// The dims of `s` with rank `rank` assumed when its rank is unknown.
Shape WithRank(const Shape& s, int rank) {
  if (!s.unknown_rank()) return s;
  Shape out;
  for (int i = 0; i < rank; ++i) out.AddDim(kUnknownDim);
  return out;
}

std::string Str(absl::Span<const int64_t> v) {
  return absl::StrCat("[", absl::StrJoin(v, ","), "]");
}

}  // namespace

absl::StatusOr<Shape> BroadcastShapes(const Shape& a, const Shape& b) {
  if (a.unknown_rank() || b.unknown_rank()) return Shape::UnknownRank();
  int rank = std::max(a.rank(), b.rank());
  Shape out;
  for (int i = 0; i < rank; ++i) {
    int ia = i - (rank - a.rank());
    int ib = i - (rank - b.rank());
    int64_t da = ia >= 0 ? a.dim(ia) : 1;
    int64_t db = ib >= 0 ? b.dim(ib) : 1;
    int64_t d;
    if (Known(da) && Known(db)) {
      if (da != db && da != 1 && db != 1) {
        return Invalid(absl::StrCat("shapes ", a.DebugString(), " and ",
                                    b.DebugString(), " do not broadcast"));
      }
      d = da == 1 ? db : da;
    } else if (Known(da)) {
      d = da == 1 ? kUnknownDim : da;  // the unknown one is 1 or equal
    } else if (Known(db)) {
      d = db == 1 ? kUnknownDim : db;
    } else {
      d = kUnknownDim;
    }
    out.AddDim(d);
  }
  return out;
}

Shape UnknownDims(int64_t rank) {
  if (rank < 0) return Shape::UnknownRank();
  return Shape(std::vector<int64_t>(rank, kUnknownDim));
}

absl::StatusOr<int> NormalizeAxis(int64_t axis, int rank) {
  if (axis < -rank || axis >= rank) {
    return absl::InvalidArgumentError(absl::StrCat(
        "axis ", axis, " is out of range for rank ", rank, " (valid: [",
        -rank, ", ", rank, "))"));
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

absl::StatusOr<std::vector<int>> NormalizeAxes(absl::Span<const int64_t> axes,
                                               int rank) {
  std::vector<int> out;
  std::vector<bool> seen(rank, false);
  for (int64_t a : axes) {
    ASSIGN_OR_RETURN(int axis, NormalizeAxis(a, rank));
    if (seen[axis]) {
      return Invalid(absl::StrCat("axis ", a, " appears twice in ", Str(axes)));
    }
    seen[axis] = true;
    out.push_back(axis);
  }
  return out;
}

absl::StatusOr<int64_t> ConvOutputSize(int64_t in, int64_t kernel,
                                       int64_t stride, int64_t pad_begin,
                                       int64_t pad_end, int64_t dilation) {
  if (stride < 1 || dilation < 1 || pad_begin < 0 || pad_end < 0) {
    return Invalid("stride and dilation must be >= 1 and pads >= 0");
  }
  if (Known(kernel) && kernel < 1) {
    return Invalid(absl::StrCat("kernel size ", kernel, " must be >= 1"));
  }
  if (!Known(in) || !Known(kernel)) return kUnknownDim;
  Int128 padded = Int128{in} + pad_begin + pad_end;
  Int128 window = Int128{dilation} * (kernel - 1) + 1;
  if (window > padded) {
    return Invalid(absl::StrCat("window of ", static_cast<int64_t>(window),
                                " (kernel ", kernel, ", dilation ", dilation,
                                ") is larger than the padded input ",
                                static_cast<int64_t>(padded)));
  }
  Int128 out = (padded - window) / stride + 1;
  if (out > kMaxElements) return Invalid("output size is too large");
  return static_cast<int64_t>(out);
}

absl::StatusOr<SliceDim> NormalizeSlice(int64_t dim, int64_t begin,
                                        int64_t end, int64_t step) {
  if (step == 0) return Invalid("slice step must not be 0");
  Int128 b = begin, e = end;
  if (b < 0) b += dim;
  if (e < 0) e += dim;
  SliceDim out;
  out.step = step;
  if (step > 0) {
    b = std::clamp<Int128>(b, 0, dim);
    e = std::clamp<Int128>(e, 0, dim);
    out.size = e > b ? static_cast<int64_t>((e - b - 1) / step + 1) : 0;
  } else {
    b = std::clamp<Int128>(b, -1, dim - 1);
    e = std::clamp<Int128>(e, -1, dim - 1);
    out.size = b > e ? static_cast<int64_t>((b - e - 1) / -Int128{step} + 1)
                     : 0;
  }
  out.start = out.size > 0 ? static_cast<int64_t>(b) : 0;
  return out;
}

absl::StatusOr<Shape> MatMulShape(const Shape& a, const Shape& b,
                                  bool transpose_a, bool transpose_b) {
  if ((!a.unknown_rank() && a.rank() < 2) ||
      (!b.unknown_rank() && b.rank() < 2)) {
    return Invalid(absl::StrCat("MatMul operands need rank >= 2; got ",
                                a.DebugString(), " and ", b.DebugString()));
  }
  if (a.unknown_rank() || b.unknown_rank()) return Shape::UnknownRank();
  int ra = a.rank(), rb = b.rank();
  int64_t m = a.dim(transpose_a ? ra - 1 : ra - 2);
  int64_t ka = a.dim(transpose_a ? ra - 2 : ra - 1);
  int64_t kb = b.dim(transpose_b ? rb - 1 : rb - 2);
  int64_t n = b.dim(transpose_b ? rb - 2 : rb - 1);
  if (Known(ka) && Known(kb) && ka != kb) {
    return Invalid(absl::StrCat(
        "MatMul inner dimensions differ: a ", a.DebugString(),
        transpose_a ? " (transposed)" : "", " has ", ka, ", b ",
        b.DebugString(), transpose_b ? " (transposed)" : "", " has ", kb));
  }
  Shape batch_a(absl::MakeConstSpan(a.dims()).subspan(0, ra - 2));
  Shape batch_b(absl::MakeConstSpan(b.dims()).subspan(0, rb - 2));
  absl::StatusOr<Shape> out = BroadcastShapes(batch_a, batch_b);
  if (!out.ok()) {
    return Invalid(absl::StrCat("MatMul batch dimensions: ",
                                out.status().message()));
  }
  out->AddDim(m);
  out->AddDim(n);
  return out;
}

absl::StatusOr<Shape> ReduceShape(const Shape& input,
                                  absl::Span<const int64_t> axes,
                                  bool keepdims) {
  if (input.unknown_rank()) {
    if (axes.empty() && !keepdims) return Shape();
    return Shape::UnknownRank();
  }
  std::vector<bool> reduced(input.rank(), axes.empty());
  ASSIGN_OR_RETURN(std::vector<int> norm, NormalizeAxes(axes, input.rank()));
  for (int a : norm) reduced[a] = true;
  Shape out;
  for (int i = 0; i < input.rank(); ++i) {
    if (!reduced[i]) {
      out.AddDim(input.dim(i));
    } else if (keepdims) {
      out.AddDim(1);
    }
  }
  return out;
}

absl::StatusOr<Shape> ReshapeShape(const Shape& input,
                                   absl::Span<const int64_t> shape) {
  if (static_cast<int>(shape.size()) > kMaxRank) {
    return Invalid(absl::StrCat("Reshape target has rank ", shape.size(),
                                ", more than ", kMaxRank));
  }
  int infer = -1;
  Int128 product = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) {
        return Invalid(absl::StrCat("Reshape target ", Str(shape),
                                    " has more than one -1"));
      }
      infer = static_cast<int>(i);
    } else if (shape[i] < 0) {
      return Invalid(absl::StrCat("Reshape target ", Str(shape),
                                  " has a negative dimension ", shape[i]));
    } else {
      product *= shape[i];
      if (product > kMaxElements) {
        return Invalid(absl::StrCat("Reshape target ", Str(shape),
                                    " has more than 2^48 elements"));
      }
    }
  }
  Shape out(shape);
  if (!input.IsFullyDefined()) {
    if (infer >= 0) out.set_dim(infer, kUnknownDim);
    return out;
  }
  ASSIGN_OR_RETURN(int64_t n, input.NumElements());
  if (infer >= 0) {
    if (product == 0 || n % static_cast<int64_t>(product) != 0) {
      return Invalid(absl::StrCat("cannot reshape ", input.DebugString(), " (",
                                  n, " elements) to ", Str(shape)));
    }
    out.set_dim(infer, n / static_cast<int64_t>(product));
  } else if (product != n) {
    return Invalid(absl::StrCat(
        "cannot reshape ", input.DebugString(), " (", n, " elements) to ",
        Str(shape), " (", static_cast<int64_t>(product), " elements)"));
  }
  return out;
}

absl::StatusOr<Shape> TransposeShape(const Shape& input,
                                     absl::Span<const int64_t> perm) {
  if (perm.empty()) {
    if (input.unknown_rank()) return input;
    Shape out;
    for (int i = input.rank() - 1; i >= 0; --i) out.AddDim(input.dim(i));
    return out;
  }
  int rank = static_cast<int>(perm.size());
  if (!input.unknown_rank() && input.rank() != rank) {
    return Invalid(absl::StrCat("perm ", Str(perm), " has ", perm.size(),
                                " entries for input of rank ", input.rank()));
  }
  if (rank > kMaxRank) return Invalid("perm is longer than the maximum rank");
  std::vector<bool> seen(rank, false);
  Shape in = WithRank(input, rank);
  Shape out;
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p]) {
      return Invalid(
          absl::StrCat("perm ", Str(perm), " is not a permutation of 0..",
                       rank - 1));
    }
    seen[p] = true;
    out.AddDim(in.dim(static_cast<int>(p)));
  }
  return out;
}

absl::StatusOr<Shape> SqueezeShape(const Shape& input,
                                   absl::Span<const int64_t> axes) {
  if (input.unknown_rank()) return input;
  std::vector<bool> drop(input.rank(), false);
  if (axes.empty()) {
    for (int i = 0; i < input.rank(); ++i) {
      if (!Known(input.dim(i))) return Shape::UnknownRank();
      drop[i] = input.dim(i) == 1;
    }
  } else {
    ASSIGN_OR_RETURN(std::vector<int> norm, NormalizeAxes(axes, input.rank()));
    for (int a : norm) {
      if (Known(input.dim(a)) && input.dim(a) != 1) {
        return Invalid(absl::StrCat("cannot squeeze axis ", a, " of ",
                                    input.DebugString(), ": size is not 1"));
      }
      drop[a] = true;
    }
  }
  Shape out;
  for (int i = 0; i < input.rank(); ++i) {
    if (!drop[i]) out.AddDim(input.dim(i));
  }
  return out;
}

absl::StatusOr<Shape> UnsqueezeShape(const Shape& input,
                                     absl::Span<const int64_t> axes) {
  if (axes.empty()) return Invalid("Unsqueeze needs at least one axis");
  if (input.unknown_rank()) return input;
  int64_t out_rank = input.rank() + static_cast<int64_t>(axes.size());
  if (out_rank > kMaxRank) {
    return Invalid(absl::StrCat("Unsqueeze result has rank ", out_rank,
                                ", more than ", kMaxRank));
  }
  ASSIGN_OR_RETURN(std::vector<int> norm,
                   NormalizeAxes(axes, static_cast<int>(out_rank)));
  std::vector<bool> inserted(out_rank, false);
  for (int a : norm) inserted[a] = true;
  Shape out;
  int next = 0;
  for (int i = 0; i < out_rank; ++i) {
    out.AddDim(inserted[i] ? 1 : input.dim(next++));
  }
  return out;
}

absl::StatusOr<Shape> ConcatShape(absl::Span<const Shape> inputs,
                                  int64_t axis) {
  if (inputs.empty()) return Invalid("Concat needs at least one input");
  int rank = -1;
  for (const Shape& s : inputs) {
    if (s.unknown_rank()) continue;
    if (rank >= 0 && s.rank() != rank) {
      return Invalid(absl::StrCat("Concat inputs have different ranks: ",
                                  rank, " and ", s.rank()));
    }
    rank = s.rank();
  }
  if (rank < 0) return Shape::UnknownRank();
  ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, rank));
  Shape out = WithRank(inputs[0], rank);
  Int128 total = 0;
  bool total_known = true;
  for (size_t k = 0; k < inputs.size(); ++k) {
    Shape s = WithRank(inputs[k], rank);
    for (int i = 0; i < rank; ++i) {
      if (i == a) continue;
      ASSIGN_OR_RETURN(
          int64_t d,
          MergeDim(out.dim(i), s.dim(i),
                   absl::StrCat("Concat input ", k, " differs in dimension ",
                                i)));
      out.set_dim(i, d);
    }
    if (Known(s.dim(a))) {
      total += s.dim(a);
    } else {
      total_known = false;
    }
  }
  if (total > kMaxElements) return Invalid("Concat result is too large");
  out.set_dim(a, total_known ? static_cast<int64_t>(total) : kUnknownDim);
  return out;
}

absl::StatusOr<std::vector<Shape>> SplitShapes(
    const Shape& input, int64_t axis, int64_t num_split,
    absl::Span<const int64_t> sizes) {
  if (num_split < 1 || num_split > kMaxListArgs) {
    return Invalid(absl::StrCat("num_split must be in [1, ", kMaxListArgs,
                                "], got ", num_split));
  }
  if (!sizes.empty() && static_cast<int64_t>(sizes.size()) != num_split) {
    return Invalid(absl::StrCat("sizes ", Str(sizes), " has ", sizes.size(),
                                " entries but num_split is ", num_split));
  }
  Int128 sum = 0;
  for (int64_t s : sizes) {
    if (s < 0) return Invalid(absl::StrCat("sizes ", Str(sizes),
                                           " has a negative entry"));
    sum += s;
  }
  if (input.unknown_rank()) {
    return std::vector<Shape>(num_split, Shape::UnknownRank());
  }
  ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, input.rank()));
  int64_t dim = input.dim(a);
  if (Known(dim)) {
    if (sizes.empty() && dim % num_split != 0) {
      return Invalid(absl::StrCat("dimension ", a, " of ", input.DebugString(),
                                  " does not split into ", num_split,
                                  " equal parts"));
    }
    if (!sizes.empty() && sum != dim) {
      return Invalid(absl::StrCat("sizes ", Str(sizes), " do not add up to ",
                                  dim, ", dimension ", a, " of ",
                                  input.DebugString()));
    }
  }
  std::vector<Shape> out(num_split, input);
  for (int64_t i = 0; i < num_split; ++i) {
    int64_t d = !sizes.empty() ? sizes[i]
                : Known(dim)   ? dim / num_split
                               : kUnknownDim;
    out[i].set_dim(a, d);
  }
  return out;
}

absl::StatusOr<Shape> SliceShape(const Shape& input,
                                 absl::Span<const int64_t> begin,
                                 absl::Span<const int64_t> end,
                                 absl::Span<const int64_t> axes,
                                 absl::Span<const int64_t> steps) {
  size_t n = begin.size();
  if (end.size() != n || (!axes.empty() && axes.size() != n) ||
      (!steps.empty() && steps.size() != n)) {
    return Invalid(absl::StrCat(
        "Slice begin, end, axes and steps differ in length: ", begin.size(),
        ", ", end.size(), ", ", axes.size(), ", ", steps.size()));
  }
  for (int64_t s : steps) {
    if (s == 0) return Invalid("Slice step must not be 0");
  }
  if (input.unknown_rank()) return input;
  std::vector<int64_t> default_axes;
  if (axes.empty()) {
    if (n > static_cast<size_t>(input.rank())) {
      return Invalid(absl::StrCat("Slice has ", n, " bounds for input of rank ",
                                  input.rank()));
    }
    for (size_t i = 0; i < n; ++i) default_axes.push_back(i);
    axes = default_axes;
  }
  ASSIGN_OR_RETURN(std::vector<int> norm, NormalizeAxes(axes, input.rank()));
  Shape out = input;
  for (size_t i = 0; i < n; ++i) {
    int64_t dim = input.dim(norm[i]);
    if (!Known(dim)) continue;
    ASSIGN_OR_RETURN(SliceDim sd, NormalizeSlice(dim, begin[i], end[i],
                                                 steps.empty() ? 1 : steps[i]));
    out.set_dim(norm[i], sd.size);
  }
  return out;
}

absl::StatusOr<Shape> GatherShape(const Shape& params, const Shape& indices,
                                  int64_t axis) {
  if (params.unknown_rank()) return params;
  ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, params.rank()));
  if (indices.unknown_rank()) return Shape::UnknownRank();
  if (params.rank() - 1 + indices.rank() > kMaxRank) {
    return Invalid("Gather result rank is too large");
  }
  Shape out;
  for (int i = 0; i < a; ++i) out.AddDim(params.dim(i));
  for (int64_t d : indices.dims()) out.AddDim(d);
  for (int i = a + 1; i < params.rank(); ++i) out.AddDim(params.dim(i));
  return out;
}

absl::StatusOr<Shape> ExpandShape(const Shape& input,
                                  absl::Span<const int64_t> shape) {
  if (static_cast<int>(shape.size()) > kMaxRank) {
    return Invalid("Expand shape is longer than the maximum rank");
  }
  for (int64_t d : shape) {
    if (d < 0 || d > kMaxElements) {
      return Invalid(absl::StrCat("Expand shape ", Str(shape),
                                  " has an invalid dimension ", d));
    }
  }
  absl::StatusOr<Shape> out = BroadcastShapes(input, Shape(shape));
  if (!out.ok()) {
    return Invalid(absl::StrCat("Expand: ", out.status().message()));
  }
  return out;
}

absl::Status CheckConv2DParams(const Conv2DParams& p) {
  if (p.strides.size() != 2 || p.dilations.size() != 2 || p.pads.size() != 4) {
    return Invalid(absl::StrCat(
        "strides and dilations need 2 entries and pads 4; got ",
        Str(p.strides), ", ", Str(p.dilations), ", ", Str(p.pads)));
  }
  for (int64_t v : p.strides) {
    if (v < 1 || v > kMaxElements) return Invalid("strides must be >= 1");
  }
  for (int64_t v : p.dilations) {
    if (v < 1 || v > kMaxElements) return Invalid("dilations must be >= 1");
  }
  for (int64_t v : p.pads) {
    if (v < 0 || v > kMaxElements) return Invalid("pads must be >= 0");
  }
  if (p.group < 1) {
    return Invalid(absl::StrCat("group must be >= 1, got ", p.group));
  }
  return absl::OkStatus();
}

namespace {

absl::Status CheckRank4(const Shape& s, const char* what) {
  if (!s.unknown_rank() && s.rank() != 4) {
    return Invalid(absl::StrCat(what, " must have rank 4, got ",
                                s.DebugString()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Shape> Conv2DShape(const Shape& input, const Shape& filter,
                                  const Conv2DParams& p) {
  RETURN_IF_ERROR(CheckConv2DParams(p));
  RETURN_IF_ERROR(CheckRank4(input, "Conv2D input"));
  RETURN_IF_ERROR(CheckRank4(filter, "Conv2D filter"));
  Shape in = WithRank(input, 4), f = WithRank(filter, 4);
  int64_t c = in.dim(1), o = f.dim(0), fc = f.dim(1);
  if (Known(c) && c % p.group != 0) {
    return Invalid(absl::StrCat("input channels ", c,
                                " are not divisible by group ", p.group));
  }
  if (Known(o) && o % p.group != 0) {
    return Invalid(absl::StrCat("output channels ", o,
                                " are not divisible by group ", p.group));
  }
  if (Known(c) && Known(fc) && Int128{fc} * p.group != c) {
    return Invalid(absl::StrCat(
        "filter ", filter.DebugString(), " expects ", fc, " x group ", p.group,
        " input channels; input ", input.DebugString(), " has ", c));
  }
  Shape out({in.dim(0), o, 0, 0});
  for (int i = 0; i < 2; ++i) {
    ASSIGN_OR_RETURN(int64_t d,
                     ConvOutputSize(in.dim(2 + i), f.dim(2 + i), p.strides[i],
                                    p.pads[i], p.pads[2 + i], p.dilations[i]));
    out.set_dim(2 + i, d);
  }
  return out;
}

absl::StatusOr<Shape> PoolShape(const Shape& input,
                                absl::Span<const int64_t> kernel_shape,
                                const Conv2DParams& p) {
  RETURN_IF_ERROR(CheckConv2DParams(p));
  if (kernel_shape.size() != 2) {
    return Invalid(absl::StrCat("kernel_shape needs 2 entries, got ",
                                Str(kernel_shape)));
  }
  for (int64_t k : kernel_shape) {
    if (k < 1 || k > kMaxElements) {
      return Invalid(absl::StrCat("kernel_shape ", Str(kernel_shape),
                                  " must be >= 1"));
    }
  }
  RETURN_IF_ERROR(CheckRank4(input, "pool input"));
  Shape in = WithRank(input, 4);
  Shape out({in.dim(0), in.dim(1), 0, 0});
  for (int i = 0; i < 2; ++i) {
    ASSIGN_OR_RETURN(int64_t d,
                     ConvOutputSize(in.dim(2 + i), kernel_shape[i],
                                    p.strides[i], p.pads[i], p.pads[2 + i]));
    out.set_dim(2 + i, d);
  }
  return out;
}

absl::Status UnchangedShapeFn(InferenceContext& c) {
  c.set_output_shape(0, c.input_shape(0));
  return absl::OkStatus();
}

absl::Status BroadcastShapeFn(InferenceContext& c) {
  Shape out = c.input_shape(0);
  for (int i = 1; i < c.num_inputs(); ++i) {
    ASSIGN_OR_RETURN(out, BroadcastShapes(out, c.input_shape(i)));
  }
  c.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

}  // namespace sluice
