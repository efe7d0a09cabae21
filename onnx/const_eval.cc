// The import-time constant folder: simple loops over host tensors. Speed
// does not matter here (the folded values are shapes, masks and weight
// transforms); clarity and bounds do.
#include "onnx/const_eval.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <type_traits>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/shape_fns.h"

namespace sluice {
namespace {

template <typename T>
constexpr bool kIsHalf = std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;

// Calls f(T{}) with T the C++ type of `dtype`.
template <typename F>
absl::Status VisitDtype(DataType dtype, F&& f) {
  switch (dtype) {
    case DT_FLOAT:
      return f(float{});
    case DT_FLOAT16:
      return f(half{});
    case DT_BFLOAT16:
      return f(bfloat16{});
    case DT_DOUBLE:
      return f(double{});
    case DT_INT8:
      return f(int8_t{});
    case DT_INT32:
      return f(int32_t{});
    case DT_INT64:
      return f(int64_t{});
    case DT_UINT8:
      return f(uint8_t{});
    case DT_BOOL:
      return f(bool{});
    default:
      return absl::UnimplementedError(
          absl::StrCat("no folding for ", DataTypeName(dtype)));
  }
}

template <typename Dst, typename Src>
Dst Convert(Src v) {
  if constexpr (std::is_same_v<Dst, Src>) {
    return v;
  } else if constexpr (std::is_same_v<Dst, bool>) {
    if constexpr (kIsHalf<Src>) {
      return static_cast<float>(v) != 0.0f;
    } else {
      return v != Src(0);
    }
  } else if constexpr (kIsHalf<Src> || kIsHalf<Dst>) {
    return static_cast<Dst>(static_cast<float>(v));
  } else {
    return static_cast<Dst>(v);
  }
}

std::vector<int64_t> Strides(const Shape& s) {
  std::vector<int64_t> strides(s.rank(), 1);
  for (int i = s.rank() - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * s.dim(i + 1);
  }
  return strides;
}

// For every element of `out` in row-major order, calls f(coords) and stores
// the flat source index it returns.
std::vector<int64_t> MapIndices(
    const Shape& out, const std::function<int64_t(const DimVector&)>& f) {
  std::vector<int64_t> idx;
  const int64_t n = out.num_elements();
  idx.reserve(n);
  DimVector c(out.rank(), 0);
  for (int64_t i = 0; i < n; ++i) {
    idx.push_back(f(c));
    for (int d = out.rank() - 1; d >= 0; --d) {
      if (++c[d] < out.dim(d)) break;
      c[d] = 0;
    }
  }
  return idx;
}

// Source indices of a NumPy broadcast from `in` to `out`.
std::vector<int64_t> BroadcastIndices(const Shape& in, const Shape& out) {
  std::vector<int64_t> strides = Strides(in);
  const int offset = out.rank() - in.rank();
  return MapIndices(out, [&](const DimVector& c) {
    int64_t s = 0;
    for (int d = 0; d < in.rank(); ++d) {
      if (in.dim(d) != 1) s += c[d + offset] * strides[d];
    }
    return s;
  });
}

absl::StatusOr<Tensor> GatherBytes(const Tensor& in,
                                   const std::vector<int64_t>& idx,
                                   const Shape& out_shape) {
  ASSIGN_OR_RETURN(Tensor out, Tensor::Create(in.dtype(), out_shape));
  const size_t size = DataTypeSize(in.dtype());
  const char* src = static_cast<const char*>(in.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  for (size_t i = 0; i < idx.size(); ++i) {
    std::memcpy(dst + i * size, src + idx[i] * size, size);
  }
  return out;
}

absl::StatusOr<Tensor> Unary(const std::string& op, const Tensor& x) {
  ASSIGN_OR_RETURN(Tensor out, Tensor::Create(x.dtype(), x.shape()));
  RETURN_IF_ERROR(VisitDtype(x.dtype(), [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      return absl::UnimplementedError("bool");
    } else {
      std::function<double(double)> f;
      if (op == "Neg") f = [](double v) { return -v; };
      if (op == "Abs") f = [](double v) { return std::fabs(v); };
      if (op == "Relu") f = [](double v) { return v > 0 ? v : 0.0; };
      if (op == "Sqrt") f = [](double v) { return std::sqrt(v); };
      if (op == "Rsqrt") f = [](double v) { return 1.0 / std::sqrt(v); };
      if (op == "Exp") f = [](double v) { return std::exp(v); };
      if (op == "Log") f = [](double v) { return std::log(v); };
      if (op == "Erf") f = [](double v) { return std::erf(v); };
      if (op == "Tanh") f = [](double v) { return std::tanh(v); };
      if (op == "Sigmoid") f = [](double v) { return 1 / (1 + std::exp(-v)); };
      if (!f) return absl::UnimplementedError(op);
      auto in = x.flat<T>();
      auto o = out.flat<T>();
      for (size_t i = 0; i < in.size(); ++i) {
        if constexpr (std::is_integral_v<T>) {
          o[i] = op == "Neg"   ? static_cast<T>(-in[i])
                 : op == "Abs" ? static_cast<T>(in[i] < 0 ? -in[i] : in[i])
                               : static_cast<T>(in[i] > 0 ? in[i] : 0);
        } else {
          o[i] = static_cast<T>(f(static_cast<double>(in[i])));
        }
      }
      return absl::OkStatus();
    }
  }));
  return out;
}

template <typename T>
absl::StatusOr<T> BinaryOp(const std::string& op, T a, T b) {
  if (op == "Add") return static_cast<T>(a + b);
  if (op == "Sub") return static_cast<T>(a - b);
  if (op == "Mul") return static_cast<T>(a * b);
  if (op == "Maximum") return a < b ? b : a;
  if (op == "Minimum") return b < a ? b : a;
  if (op == "Div") {
    if constexpr (std::is_integral_v<T>) {
      if (b == 0) return absl::InvalidArgumentError("integer division by 0");
    }
    return static_cast<T>(a / b);
  }
  if (op == "Pow") {
    return static_cast<T>(
        std::pow(static_cast<double>(a), static_cast<double>(b)));
  }
  if (op == "Mod" || op == "FMod") {  // as kernels/cpu/elementwise_binary.cc
    T r;
    if constexpr (std::is_integral_v<T>) {
      if (b == 0) return absl::InvalidArgumentError("integer modulo by 0");
      if constexpr (std::is_signed_v<T>) {
        if (b == T(-1)) return T(0);  // INT_MIN % -1 overflows
      }
      r = static_cast<T>(a % b);
    } else {
      r = static_cast<T>(
          std::fmod(static_cast<double>(a), static_cast<double>(b)));
    }
    if constexpr (!std::is_unsigned_v<T>) {
      if (op == "Mod" && r != T(0) && ((r < T(0)) != (b < T(0)))) {
        r = static_cast<T>(r + b);
      }
    }
    return r;
  }
  return absl::UnimplementedError(op);
}

absl::StatusOr<Tensor> Binary(const std::string& op, const Tensor& x,
                              const Tensor& y, DataType out_dtype,
                              const Shape& out_shape) {
  std::vector<int64_t> xi = BroadcastIndices(x.shape(), out_shape);
  std::vector<int64_t> yi = BroadcastIndices(y.shape(), out_shape);
  ASSIGN_OR_RETURN(Tensor out, Tensor::Create(out_dtype, out_shape));
  RETURN_IF_ERROR(VisitDtype(x.dtype(), [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    auto a = x.flat<T>();
    auto b = y.flat<T>();
    for (size_t i = 0; i < xi.size(); ++i) {
      T u = a[xi[i]], v = b[yi[i]];
      if (out_dtype == DT_BOOL) {
        bool r = op == "Equal" ? u == v : op == "Less" ? u < v : v < u;
        out.data<bool>()[i] = r;
        continue;
      }
      if constexpr (std::is_same_v<T, bool>) {
        return absl::UnimplementedError("bool arithmetic");
      } else {
        ASSIGN_OR_RETURN(out.data<T>()[i], BinaryOp<T>(op, u, v));
      }
    }
    return absl::OkStatus();
  }));
  return out;
}

absl::StatusOr<Tensor> Cast(const Tensor& x, DataType dst) {
  ASSIGN_OR_RETURN(Tensor out, Tensor::Create(dst, x.shape()));
  RETURN_IF_ERROR(VisitDtype(x.dtype(), [&](auto src_tag) -> absl::Status {
    using S = decltype(src_tag);
    return VisitDtype(dst, [&](auto dst_tag) -> absl::Status {
      using D = decltype(dst_tag);
      auto in = x.flat<S>();
      auto o = out.flat<D>();
      for (size_t i = 0; i < in.size(); ++i) o[i] = Convert<D, S>(in[i]);
      return absl::OkStatus();
    });
  }));
  return out;
}

absl::StatusOr<Tensor> Where(const Tensor& c, const Tensor& x, const Tensor& y,
                             const Shape& out_shape) {
  std::vector<int64_t> ci = BroadcastIndices(c.shape(), out_shape);
  std::vector<int64_t> xi = BroadcastIndices(x.shape(), out_shape);
  std::vector<int64_t> yi = BroadcastIndices(y.shape(), out_shape);
  ASSIGN_OR_RETURN(Tensor out, Tensor::Create(x.dtype(), out_shape));
  const size_t size = DataTypeSize(x.dtype());
  const bool* cond = c.data<bool>();
  for (size_t i = 0; i < ci.size(); ++i) {
    const char* src =
        cond[ci[i]] ? static_cast<const char*>(x.raw_data()) + xi[i] * size
                    : static_cast<const char*>(y.raw_data()) + yi[i] * size;
    std::memcpy(static_cast<char*>(out.raw_data()) + i * size, src, size);
  }
  return out;
}

absl::StatusOr<Tensor> Transpose(const Tensor& x, const AttrMap& attrs,
                                 const Shape& out_shape) {
  ASSIGN_OR_RETURN(std::vector<int64_t> perm, attrs.GetIntList("perm"));
  if (perm.empty()) {
    for (int i = x.rank() - 1; i >= 0; --i) perm.push_back(i);
  }
  std::vector<int64_t> strides = Strides(x.shape());
  std::vector<int64_t> idx = MapIndices(out_shape, [&](const DimVector& c) {
    int64_t s = 0;
    for (size_t j = 0; j < perm.size(); ++j) s += c[j] * strides[perm[j]];
    return s;
  });
  return GatherBytes(x, idx, out_shape);
}

// One output of a slice: the first index and step per input dimension.
absl::StatusOr<Tensor> SliceWith(const Tensor& x,
                                 const std::vector<int64_t>& start,
                                 const std::vector<int64_t>& step,
                                 const Shape& out_shape) {
  std::vector<int64_t> strides = Strides(x.shape());
  std::vector<int64_t> idx = MapIndices(out_shape, [&](const DimVector& c) {
    int64_t s = 0;
    for (int d = 0; d < x.rank(); ++d) {
      s += (start[d] + c[d] * step[d]) * strides[d];
    }
    return s;
  });
  return GatherBytes(x, idx, out_shape);
}

absl::StatusOr<Tensor> Slice(const Tensor& x, const AttrMap& attrs,
                             const Shape& out_shape) {
  ASSIGN_OR_RETURN(std::vector<int64_t> begin, attrs.GetIntList("begin"));
  ASSIGN_OR_RETURN(std::vector<int64_t> end, attrs.GetIntList("end"));
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, attrs.GetIntList("axes"));
  ASSIGN_OR_RETURN(std::vector<int64_t> steps, attrs.GetIntList("steps"));
  if (axes.empty()) {
    for (size_t i = 0; i < begin.size(); ++i) axes.push_back(i);
  }
  if (steps.empty()) steps.assign(begin.size(), 1);
  std::vector<int64_t> start(x.rank(), 0), step(x.rank(), 1);
  for (size_t i = 0; i < axes.size(); ++i) {
    ASSIGN_OR_RETURN(int a, NormalizeAxis(axes[i], x.rank()));
    ASSIGN_OR_RETURN(SliceDim sd,
                     NormalizeSlice(x.dim(a), begin[i], end[i], steps[i]));
    start[a] = sd.start;
    step[a] = sd.step;
  }
  return SliceWith(x, start, step, out_shape);
}

absl::StatusOr<std::vector<Tensor>> Split(const Tensor& x, const AttrMap& attrs,
                                          const std::vector<Shape>& shapes) {
  ASSIGN_OR_RETURN(int64_t axis_attr, attrs.GetInt("axis"));
  ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_attr, x.rank()));
  std::vector<Tensor> outs;
  std::vector<int64_t> start(x.rank(), 0), step(x.rank(), 1);
  for (const Shape& s : shapes) {
    ASSIGN_OR_RETURN(Tensor t, SliceWith(x, start, step, s));
    outs.push_back(std::move(t));
    start[axis] += s.dim(axis);
  }
  return outs;
}

absl::StatusOr<Tensor> Concat(const std::vector<Tensor>& xs,
                              const AttrMap& attrs, const Shape& out_shape) {
  ASSIGN_OR_RETURN(int64_t axis_attr, attrs.GetInt("axis"));
  ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_attr, out_shape.rank()));
  ASSIGN_OR_RETURN(Tensor out, Tensor::Create(xs[0].dtype(), out_shape));
  int64_t outer = 1;
  for (int d = 0; d < axis; ++d) outer *= out_shape.dim(d);
  char* dst = static_cast<char*>(out.raw_data());
  for (int64_t o = 0; o < outer; ++o) {
    for (const Tensor& x : xs) {
      const size_t block = x.bytes() / (outer == 0 ? 1 : outer);
      std::memcpy(dst, static_cast<const char*>(x.raw_data()) + o * block,
                  block);
      dst += block;
    }
  }
  return out;
}

absl::StatusOr<Tensor> Gather(const Tensor& params, const Tensor& indices,
                              const AttrMap& attrs, const Shape& out_shape) {
  ASSIGN_OR_RETURN(int64_t axis_attr, attrs.GetInt("axis"));
  ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_attr, params.rank()));
  std::vector<int64_t> ind;
  if (indices.dtype() == DT_INT32) {
    for (int32_t v : indices.flat<int32_t>()) ind.push_back(v);
  } else {
    for (int64_t v : indices.flat<int64_t>()) ind.push_back(v);
  }
  const int64_t dim = params.dim(axis);
  for (int64_t& v : ind) {
    if (v < -dim || v >= dim) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Gather index ", v, " is out of range for a dimension of ", dim));
    }
    if (v < 0) v += dim;
  }
  std::vector<int64_t> strides = Strides(params.shape());
  std::vector<int64_t> istrides = Strides(indices.shape());
  const int q = indices.rank();
  std::vector<int64_t> idx = MapIndices(out_shape, [&](const DimVector& c) {
    int64_t s = 0;
    for (int d = 0; d < axis; ++d) s += c[d] * strides[d];
    int64_t flat = 0;
    for (int k = 0; k < q; ++k) flat += c[axis + k] * istrides[k];
    s += ind[flat] * strides[axis];
    for (int d = axis + 1; d < params.rank(); ++d) {
      s += c[d - 1 + q] * strides[d];
    }
    return s;
  });
  return GatherBytes(params, idx, out_shape);
}

const absl::flat_hash_set<std::string>& Ops() {
  static const auto* ops = new absl::flat_hash_set<std::string>{
      "Identity", "Cast",      "Neg",    "Abs",       "Relu",  "Sqrt",
      "Rsqrt",    "Exp",       "Log",    "Erf",       "Tanh",  "Sigmoid",
      "Add",      "Sub",       "Mul",    "Div",       "Pow",   "Maximum",
      "Minimum",  "Equal",     "Less",   "Greater",   "Where", "Reshape",
      "Mod",      "FMod",
      "Squeeze",  "Unsqueeze", "Expand", "Transpose", "Slice", "Concat",
      "Split",    "Gather"};
  return *ops;
}

}  // namespace

bool CanEvaluateConst(const std::string& op) { return Ops().contains(op); }

absl::StatusOr<std::vector<Tensor>> EvaluateConst(
    const std::string& op, const AttrMap& attrs, const std::vector<Tensor>& in,
    const std::vector<DataType>& out_dtypes,
    const std::vector<Shape>& out_shapes) {
  for (const Shape& s : out_shapes) {
    if (!s.IsFullyDefined()) {
      return absl::UnimplementedError("output shape not fully known");
    }
  }
  if (op == "Split") return Split(in[0], attrs, out_shapes);
  const Shape& shape = out_shapes[0];
  Tensor out;
  if (op == "Identity" || op == "Reshape" || op == "Squeeze" ||
      op == "Unsqueeze") {
    out = in[0].Reshaped(shape);
  } else if (op == "Cast") {
    ASSIGN_OR_RETURN(out, Cast(in[0], out_dtypes[0]));
  } else if (op == "Expand") {
    ASSIGN_OR_RETURN(
        out, GatherBytes(in[0], BroadcastIndices(in[0].shape(), shape), shape));
  } else if (op == "Where") {
    ASSIGN_OR_RETURN(out, Where(in[0], in[1], in[2], shape));
  } else if (op == "Transpose") {
    ASSIGN_OR_RETURN(out, Transpose(in[0], attrs, shape));
  } else if (op == "Slice") {
    ASSIGN_OR_RETURN(out, Slice(in[0], attrs, shape));
  } else if (op == "Concat") {
    ASSIGN_OR_RETURN(out, Concat(in, attrs, shape));
  } else if (op == "Gather") {
    ASSIGN_OR_RETURN(out, Gather(in[0], in[1], attrs, shape));
  } else if (in.size() == 1) {
    ASSIGN_OR_RETURN(out, Unary(op, in[0]));
  } else {
    ASSIGN_OR_RETURN(out, Binary(op, in[0], in[1], out_dtypes[0], shape));
  }
  if (out.shape() != shape || out.dtype() != out_dtypes[0]) {
    return absl::InternalError(absl::StrCat(
        "folding ", op, " gave ", out.DebugString(0), ", inference said ",
        DataTypeName(out_dtypes[0]), shape.DebugString()));
  }
  return std::vector<Tensor>{std::move(out)};
}

}  // namespace sluice
