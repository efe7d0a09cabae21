// TensorProto <-> Tensor. Every size in a proto is checked against the data
// actually present (or the external file's size, in external_data.cc) before
// anything is allocated, so a file cannot make the loader allocate more than
// it holds, except for splats, which are capped at kMaxSplatBytes.
#include "core/tensor_proto.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/external_data.h"
#include "core/status_macros.h"

namespace sluice {
namespace {

// A single value filling a large tensor costs memory the file does not hold;
// beyond this the data must be stored explicitly.
constexpr int64_t kMaxSplatBytes = int64_t{1} << 30;

// Whether `v` is a value of the integer type T (float lists never fill
// integers, so only integral sources are checked).
template <typename T, typename Src>
bool InRange(Src v) {
  if constexpr (!std::is_integral_v<Src>) {
    return true;
  } else if constexpr (kIsSmallInt<T>) {
    return v >= T::kMin && v <= T::kMax;
  } else {
    return std::in_range<T>(v);
  }
}

// Fills `t` from a typed value list (one value: a splat). `Src` is the list's
// element type.
template <typename Src>
absl::Status FillFromList(const google::protobuf::RepeatedField<Src>& values,
                          Tensor& t) {
  absl::Status status = absl::OkStatus();
  const int64_t n = t.NumElements();
  SLUICE_SWITCH_DTYPE(t.dtype(), {
    T* out = t.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      Src v = values.size() == 1 ? values[0] : values[static_cast<int>(i)];
      if constexpr (std::is_same_v<T, bool>) {
        if (v != 0 && v != 1) {
          status = Invalid(absl::StrCat("bool value ", v, " is not 0 or 1"));
          break;
        }
        out[i] = v != 0;
      } else if constexpr (std::is_integral_v<T> || kIsSmallInt<T>) {
        if (!InRange<T>(v)) {
          status = Invalid(absl::StrCat("value ", v, " is out of range for ",
                                        DataTypeName(t.dtype())));
          break;
        }
        out[i] = static_cast<T>(v);
      } else {
        out[i] = static_cast<T>(v);
      }
    }
  }, { status = Invalid("invalid dtype"); });
  return status;
}

absl::Status CheckBoolBytes(const Tensor& t) {
  if (t.dtype() != DT_BOOL) return absl::OkStatus();
  const uint8_t* bytes = static_cast<const uint8_t*>(t.raw_data());
  for (size_t i = 0; i < t.bytes(); ++i) {
    if (bytes[i] > 1) {
      return Invalid(absl::StrCat("bool tensor byte ", i, " is ", bytes[i],
                                  ", not 0 or 1"));
    }
  }
  return absl::OkStatus();
}

// Where a checked proto's data is.
enum class DataSource { kNone, kContent, kExternal, kFloatList, kIntList, kDoubleList };

// A proto's dtype, shape and data source after every check that needs no
// allocation: one data source, of the tensor's size (a list: one value per
// element, or one value within kMaxSplatBytes).
struct Layout {
  DataType dtype = DT_INVALID;
  Shape shape;
  int64_t elements = 0;
  int64_t bytes = 0;
  DataSource source = DataSource::kNone;
  int list_count = 0;
  std::string what;  // "float32[3,4] tensor", for messages
};

absl::StatusOr<Layout> CheckLayout(const TensorProto& proto) {
  Layout l;
  l.dtype = proto.dtype();
  const size_t elem = DataTypeSize(l.dtype);
  if (elem == 0) {
    return Invalid(absl::StrCat("tensor has invalid dtype ",
                                static_cast<int>(l.dtype)));
  }
  absl::StatusOr<Shape> shape = ShapeFromProto(proto.shape(), true);
  if (!shape.ok()) {
    return Invalid(absl::StrCat("tensor shape: ", shape.status().message()));
  }
  l.shape = *std::move(shape);
  ASSIGN_OR_RETURN(l.elements, l.shape.NumElements());
  const int64_t n = l.elements;
  l.bytes = n * static_cast<int64_t>(elem);
  l.what = absl::StrCat(DataTypeName(l.dtype), l.shape.DebugString(), " tensor");
  const std::string& what = l.what;

  const bool has_content = !proto.content().empty();
  const bool has_external = proto.has_external();
  const int sources = has_content + has_external +
                      (proto.float_val_size() > 0) +
                      (proto.int_val_size() > 0) +
                      (proto.double_val_size() > 0);
  if (sources > 1) {
    return Invalid(absl::StrCat(what, " has ", sources,
                                " data sources; exactly one is allowed"));
  }
  if (sources == 0) {
    if (n != 0) {
      return Invalid(absl::StrCat(what, " has ", n,
                                  " elements but no data"));
    }
    return l;
  }
  if (has_content) {
    if (static_cast<int64_t>(proto.content().size()) != l.bytes) {
      return Invalid(absl::StrCat(what, " has ", proto.content().size(),
                                  " bytes of content, expected ", l.bytes, " (",
                                  n, " elements x ", elem, " bytes)"));
    }
    l.source = DataSource::kContent;
    return l;
  }
  if (has_external) {
    // ReadExternalTensor checks the range against the tensor and the file.
    l.source = DataSource::kExternal;
    return l;
  }

  // A typed value list.
  const DataType dtype = l.dtype;
  const char* list = "";
  bool right_list = false;
  if (proto.float_val_size() > 0) {
    l.list_count = proto.float_val_size();
    l.source = DataSource::kFloatList;
    list = "float_val";
    right_list = dtype == DT_FLOAT || dtype == DT_FLOAT16 ||
                 dtype == DT_BFLOAT16 || IsSmallFloat(dtype);
  } else if (proto.int_val_size() > 0) {
    l.list_count = proto.int_val_size();
    l.source = DataSource::kIntList;
    list = "int_val";
    right_list = IsInteger(dtype) || dtype == DT_BOOL;
  } else {
    l.list_count = proto.double_val_size();
    l.source = DataSource::kDoubleList;
    list = "double_val";
    right_list = dtype == DT_DOUBLE;
  }
  const int count = l.list_count;
  if (!right_list) {
    return Invalid(absl::StrCat(
        what, " stores its values in ", list, "; use ",
        dtype == DT_DOUBLE ? "double_val"
        : IsFloatingPoint(dtype) ? "float_val"
                                 : "int_val",
        " or content"));
  }
  if (count != 1 && count != n) {
    return Invalid(absl::StrCat(what, " has ", count, " values in ", list,
                                " for ", n, " elements (give ", n,
                                ", or 1 to fill)"));
  }
  if (count == 1 && l.bytes > kMaxSplatBytes) {
    return Invalid(absl::StrCat(what, " fills ", l.bytes,
                                " bytes from one value; splats are limited to ",
                                kMaxSplatBytes, " bytes"));
  }
  return l;
}

// Fills `t` from the proto's typed value list (one value fills it all).
absl::Status FillFromProtoList(const TensorProto& proto, const Layout& l,
                               Tensor& t) {
  switch (l.source) {
    case DataSource::kFloatList:
      return FillFromList(proto.float_val(), t);
    case DataSource::kIntList:
      return FillFromList(proto.int_val(), t);
    case DataSource::kDoubleList:
      return FillFromList(proto.double_val(), t);
    default:
      return absl::InternalError("not a value list");
  }
}

// The list's one value as a scalar of the proto's dtype, checked against it.
absl::StatusOr<Tensor> DecodeOneValue(const TensorProto& proto,
                                      const Layout& l) {
  ASSIGN_OR_RETURN(Tensor one, Tensor::Create(l.dtype, Shape()));
  RETURN_IF_ERROR(FillFromProtoList(proto, l, one));
  return one;
}

bool IsList(DataSource s) {
  return s == DataSource::kFloatList || s == DataSource::kIntList ||
         s == DataSource::kDoubleList;
}

}  // namespace

bool IsSplat(const TensorProto& proto) {
  if (proto.float_val_size() + proto.int_val_size() +
          proto.double_val_size() != 1) {
    return false;
  }
  // More than one element: every dimension positive, one of them over 1.
  bool more_than_one = false;
  for (int64_t d : proto.shape().dim()) {
    if (d < 1) return false;
    more_than_one |= d > 1;
  }
  return more_than_one && !proto.shape().unknown_rank();
}

absl::StatusOr<Tensor> SplatValue(const TensorProto& proto) {
  ASSIGN_OR_RETURN(Layout l, CheckLayout(proto));
  if (!IsList(l.source) || l.list_count != 1) {
    return Invalid(absl::StrCat(l.what, " is not a splat"));
  }
  return DecodeOneValue(proto, l);
}

absl::StatusOr<Tensor> TensorFromProto(const TensorProto& proto,
                                       const std::string& base_dir,
                                       ExternalDataMode mode) {
  ASSIGN_OR_RETURN(Layout l, CheckLayout(proto));
  switch (l.source) {
    case DataSource::kNone:
      return Tensor::Create(l.dtype, l.shape);
    case DataSource::kContent: {
      ASSIGN_OR_RETURN(Tensor t, Tensor::Create(l.dtype, l.shape));
      if (l.bytes > 0) {
        std::memcpy(t.raw_data(), proto.content().data(), l.bytes);
      }
      RETURN_IF_ERROR(CheckBoolBytes(t));
      return t;
    }
    case DataSource::kExternal: {
      // The length is checked against the tensor and the file before the
      // tensor is allocated or mapped.
      absl::StatusOr<Tensor> t = ReadExternalTensor(
          proto.external(), base_dir, l.dtype, l.shape, mode);
      if (!t.ok()) {
        return absl::Status(t.status().code(),
                            absl::StrCat(l.what, ": ", t.status().message()));
      }
      RETURN_IF_ERROR(CheckBoolBytes(*t));
      return t;
    }
    default:
      break;
  }
  ASSIGN_OR_RETURN(Tensor t, Tensor::Create(l.dtype, l.shape));
  if (l.list_count == 1 && l.elements > 1) {
    // A splat: the one value is checked and converted once, then copied,
    // doubling the filled prefix each time.
    ASSIGN_OR_RETURN(Tensor one, DecodeOneValue(proto, l));
    char* out = static_cast<char*>(t.raw_data());
    std::memcpy(out, one.raw_data(), one.bytes());
    for (int64_t done = static_cast<int64_t>(one.bytes()); done < l.bytes;) {
      const int64_t step = std::min(done, l.bytes - done);
      std::memcpy(out + done, out, static_cast<size_t>(step));
      done += step;
    }
    return t;
  }
  RETURN_IF_ERROR(FillFromProtoList(proto, l, t));
  return t;
}

TensorProto TensorToProto(const Tensor& t) {
  TensorProto p;
  p.set_dtype(t.dtype());
  *p.mutable_shape() = ShapeToProto(t.shape());
  if (t.bytes() > 0) {
    p.set_content(static_cast<const char*>(t.raw_data()), t.bytes());
  }
  return p;
}

void ClearTensorData(TensorProto* proto) {
  // Swapped with empties, so that the memory is freed rather than kept as
  // capacity (clear() keeps it).
  std::string().swap(*proto->mutable_content());
  google::protobuf::RepeatedField<float>().Swap(proto->mutable_float_val());
  google::protobuf::RepeatedField<int64_t>().Swap(proto->mutable_int_val());
  google::protobuf::RepeatedField<double>().Swap(proto->mutable_double_val());
}

TensorProto TensorDescriptionProto(const Tensor& t) {
  TensorProto p;
  p.set_dtype(t.dtype());
  *p.mutable_shape() = ShapeToProto(t.shape());
  return p;
}

}  // namespace sluice
