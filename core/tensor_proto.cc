// TensorProto <-> Tensor. Every size in a proto is checked against the data
// actually present (or the external file's size, in external_data.cc) before
// anything is allocated, so a file cannot make the loader allocate more than
// it holds, except for splats, which are capped at kMaxSplatBytes.
#include "core/tensor_proto.h"

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

absl::Status Invalid(const std::string& msg) {
  return absl::InvalidArgumentError(msg);
}

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

}  // namespace

absl::StatusOr<Tensor> TensorFromProto(const TensorProto& proto,
                                       const std::string& base_dir,
                                       ExternalDataMode mode) {
  const DataType dtype = proto.dtype();
  const size_t elem = DataTypeSize(dtype);
  if (elem == 0) {
    return Invalid(absl::StrCat("tensor has invalid dtype ",
                                static_cast<int>(dtype)));
  }
  absl::StatusOr<Shape> shape = ShapeFromProto(proto.shape(), true);
  if (!shape.ok()) {
    return Invalid(absl::StrCat("tensor shape: ", shape.status().message()));
  }
  ASSIGN_OR_RETURN(int64_t n, shape->NumElements());
  const int64_t bytes = n * static_cast<int64_t>(elem);
  const std::string what = absl::StrCat(DataTypeName(dtype),
                                        shape->DebugString(), " tensor");

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
    return Tensor::Create(dtype, *shape);
  }

  if (has_content) {
    if (static_cast<int64_t>(proto.content().size()) != bytes) {
      return Invalid(absl::StrCat(what, " has ", proto.content().size(),
                                  " bytes of content, expected ", bytes, " (",
                                  n, " elements x ", elem, " bytes)"));
    }
    ASSIGN_OR_RETURN(Tensor t, Tensor::Create(dtype, *shape));
    if (bytes > 0) std::memcpy(t.raw_data(), proto.content().data(), bytes);
    RETURN_IF_ERROR(CheckBoolBytes(t));
    return t;
  }
  if (has_external) {
    // The length is checked against the tensor and the file before the
    // tensor is allocated or mapped.
    absl::StatusOr<Tensor> t =
        ReadExternalTensor(proto.external(), base_dir, dtype, *shape, mode);
    if (!t.ok()) {
      return absl::Status(t.status().code(),
                          absl::StrCat(what, ": ", t.status().message()));
    }
    RETURN_IF_ERROR(CheckBoolBytes(*t));
    return t;
  }

  // A typed value list.
  int count = 0;
  const char* list = "";
  bool right_list = false;
  if (proto.float_val_size() > 0) {
    count = proto.float_val_size();
    list = "float_val";
    right_list = dtype == DT_FLOAT || dtype == DT_FLOAT16 ||
                 dtype == DT_BFLOAT16 || IsSmallFloat(dtype);
  } else if (proto.int_val_size() > 0) {
    count = proto.int_val_size();
    list = "int_val";
    right_list = IsInteger(dtype) || dtype == DT_BOOL;
  } else {
    count = proto.double_val_size();
    list = "double_val";
    right_list = dtype == DT_DOUBLE;
  }
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
  if (count == 1 && bytes > kMaxSplatBytes) {
    return Invalid(absl::StrCat(what, " fills ", bytes,
                                " bytes from one value; splats are limited to ",
                                kMaxSplatBytes, " bytes"));
  }
  ASSIGN_OR_RETURN(Tensor t, Tensor::Create(dtype, *shape));
  if (proto.float_val_size() > 0) {
    RETURN_IF_ERROR(FillFromList(proto.float_val(), t));
  } else if (proto.int_val_size() > 0) {
    RETURN_IF_ERROR(FillFromList(proto.int_val(), t));
  } else {
    RETURN_IF_ERROR(FillFromList(proto.double_val(), t));
  }
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

}  // namespace sluice
