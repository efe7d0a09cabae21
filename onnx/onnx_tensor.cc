// ONNX element types and tensors -> sluice dtypes and host tensors.
#include "onnx/onnx_tensor.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace sluice {

absl::Status TensorError(const onnx::TensorProto& proto,
                         absl::string_view message) {
  return absl::InvalidArgumentError(
      absl::StrCat("ONNX tensor '", proto.name(), "': ", message));
}

namespace {

using OnnxTensor = onnx::TensorProto;

// Reads `raw`'s bytes of the model's file into `dst`.
absl::Status ReadRawDataInFile(const OnnxTensor& proto,
                               const RawDataInFile& raw, char* dst) {
  int64_t done = 0;
  while (done < raw.length) {
    const ssize_t got =
        pread(raw.fd, dst + done,
              static_cast<size_t>(std::min<int64_t>(raw.length - done,
                                                    int64_t{1} << 30)),
              static_cast<off_t>(raw.offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      return absl::DataLossError(absl::StrCat(
          "ONNX tensor '", proto.name(), "': its raw_data (", raw.length,
          " bytes at offset ", raw.offset,
          " of the model file) could not be read: ",
          got < 0 ? std::strerror(errno)
                  : "the file ended early (it changed while loading)"));
    }
    done += got;
  }
  return absl::OkStatus();
}

// Copies a typed repeated field into `out`, converting each value.
template <typename T, typename Field>
void CopyTyped(const Field& field, Tensor* out) {
  T* dst = out->data<T>();
  for (int i = 0; i < field.size(); ++i) dst[i] = static_cast<T>(field.Get(i));
}

// float16 and bfloat16 arrive in int32_data as their 16-bit patterns.
void CopyBits16(const google::protobuf::RepeatedField<int32_t>& field,
                Tensor* out) {
  uint16_t* dst = out->data<uint16_t>();
  for (int i = 0; i < field.size(); ++i) {
    dst[i] = static_cast<uint16_t>(field.Get(i) & 0xffff);
  }
}

// Makes bools canonical (0 or 1) whatever bytes the file held.
void CanonicalizeBools(Tensor* t) {
  if (t->dtype() != DT_BOOL) return;
  uint8_t* p = static_cast<uint8_t*>(t->raw_data());
  for (int64_t i = 0; i < t->NumElements(); ++i) p[i] = p[i] != 0 ? 1 : 0;
}

// Bytes an ONNX file uses for n elements of a packed sub-byte dtype (or of
// any dtype: n * size for the others).
int64_t PackedBytes(DataType dtype, int64_t n) {
  const int bits = DataTypeBits(dtype);
  if (bits >= 8) return n * static_cast<int64_t>(DataTypeSize(dtype));
  return (n * bits + 7) / 8;
}

// Spreads packed sub-byte values (low bits first) to one byte each,
// sign-extending int4 and int2.
void UnpackSubByte(const char* packed, Tensor* out) {
  const int bits = DataTypeBits(out->dtype());
  const int per_byte = 8 / bits;
  const unsigned mask = (1u << bits) - 1;
  const bool is_signed = IsSignedInteger(out->dtype());
  uint8_t* dst = static_cast<uint8_t*>(out->raw_data());
  for (int64_t i = 0; i < out->NumElements(); ++i) {
    const uint8_t byte = static_cast<uint8_t>(packed[i / per_byte]);
    unsigned v = (byte >> (bits * (i % per_byte))) & mask;
    if (is_signed && (v >> (bits - 1)) != 0) v |= ~mask;
    dst[i] = static_cast<uint8_t>(v);
  }
}

}  // namespace

absl::StatusOr<std::string> ExternalPath(const OnnxTensor& proto,
                                         const std::string& base_dir,
                                         const std::string& location) {
  if (base_dir.empty()) {
    return TensorError(proto,
                       "has external data but the model was not loaded from a "
                       "file, so there is no folder to find it in");
  }
  std::filesystem::path rel(location);
  if (location.empty() || rel.is_absolute()) {
    return TensorError(proto, absl::StrCat("external data location '", location,
                                           "' must be a relative path"));
  }
  for (const auto& part : rel) {
    if (part == "..") {
      return TensorError(proto,
                         absl::StrCat("external data location '", location,
                                      "' leaves the model's folder"));
    }
  }
  const std::filesystem::path path = std::filesystem::path(base_dir) / rel;
  // The text has no "..", but a symbolic link on the way may still lead
  // out: compare the resolved paths.
  std::error_code ec_root, ec_path;
  const std::filesystem::path root =
      std::filesystem::canonical(base_dir, ec_root);
  const std::filesystem::path resolved =
      std::filesystem::weakly_canonical(path, ec_path);
  if (!ec_root && !ec_path) {
    auto [r, p] = std::mismatch(root.begin(), root.end(), resolved.begin(),
                                resolved.end());
    if (r != root.end()) {
      return TensorError(
          proto, absl::StrCat("external data location '", location,
                              "' resolves to '", resolved.string(),
                              "', outside the model's folder '", root.string(),
                              "' (through a symbolic link)"));
    }
  }
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (std::filesystem::exists(st) && !std::filesystem::is_regular_file(st)) {
    return TensorError(proto, absl::StrCat("external data file '",
                                           path.string(),
                                           "' exists but is not a regular "
                                           "file"));
  }
  return path.string();
}

namespace {

// Makes `*out` (of `dtype` and `shape`) from the external data `proto`
// names, allocating it only once the file is known to hold its bytes.
absl::Status ReadExternal(const OnnxTensor& proto, const std::string& base_dir,
                          DataType dtype, const Shape& shape, int64_t n,
                          Tensor* out) {
  std::string location;
  int64_t offset = 0;
  int64_t length = -1;
  for (const auto& entry : proto.external_data()) {
    int64_t* target = nullptr;
    if (entry.key() == "location") {
      location = entry.value();
      continue;
    }
    if (entry.key() == "offset") target = &offset;
    if (entry.key() == "length") target = &length;
    if (target == nullptr) continue;  // checksum and others: not used
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(entry.value().c_str(), &end, 10);
    if (errno != 0 || end == entry.value().c_str() || *end != '\0' || v < 0) {
      return TensorError(proto,
                         absl::StrCat("external data ", entry.key(), " '",
                                      entry.value(), "' is not a byte count"));
    }
    *target = v;
  }
  ASSIGN_OR_RETURN(std::string path, ExternalPath(proto, base_dir, location));
  std::error_code ec;
  uintmax_t file_size = std::filesystem::file_size(path, ec);
  if (ec) {
    return absl::NotFoundError(
        absl::StrCat("ONNX tensor '", proto.name(), "': external data file '",
                     path, "' cannot be read: ", ec.message()));
  }
  const int64_t want = PackedBytes(dtype, n);
  if (length < 0) {
    length = static_cast<int64_t>(file_size) - offset;
  }
  if (length != want) {
    return TensorError(proto, absl::StrCat("external data holds ", length,
                                           " bytes, the tensor needs ", want));
  }
  if (static_cast<uintmax_t>(offset) > file_size ||
      static_cast<uintmax_t>(length) > file_size - offset) {
    return TensorError(
        proto, absl::StrCat("external data range [", offset, ", ",
                            offset + length, ") is past the end of '", path,
                            "' (", file_size, " bytes)"));
  }
  ASSIGN_OR_RETURN(*out, Tensor::Create(dtype, shape));
  std::ifstream in(path, std::ios::binary);
  in.seekg(offset);
  std::string packed;
  if (IsSubByte(dtype)) packed.resize(static_cast<size_t>(length));
  in.read(packed.empty() ? static_cast<char*>(out->raw_data()) : packed.data(),
          length);
  if (!in) {
    return absl::DataLossError(absl::StrCat("ONNX tensor '", proto.name(),
                                            "': reading '", path, "' failed"));
  }
  if (!packed.empty()) UnpackSubByte(packed.data(), out);
  return absl::OkStatus();
}

// Makes `*out` (of `dtype` and `shape`, `n` elements) from the typed value
// field that matches its ONNX type. The tensor is allocated only once the
// field is known to hold its `n` values, so a shape the data does not back
// (a few bytes claiming terabytes) is an error, not an allocation.
absl::Status ReadTyped(const OnnxTensor& proto, DataType dtype,
                       const Shape& shape, int64_t n, Tensor* out) {
  auto check = [&](int64_t count, absl::string_view field) -> absl::Status {
    if (count != n) {
      return TensorError(proto, absl::StrCat(field, " holds ", count,
                                             " values, the shape needs ", n));
    }
    ASSIGN_OR_RETURN(*out, Tensor::Create(dtype, shape));
    return absl::OkStatus();
  };
  switch (proto.data_type()) {
    case OnnxTensor::FLOAT:
      RETURN_IF_ERROR(check(proto.float_data_size(), "float_data"));
      CopyTyped<float>(proto.float_data(), out);
      break;
    case OnnxTensor::DOUBLE:
      RETURN_IF_ERROR(check(proto.double_data_size(), "double_data"));
      CopyTyped<double>(proto.double_data(), out);
      break;
    case OnnxTensor::INT64:
      RETURN_IF_ERROR(check(proto.int64_data_size(), "int64_data"));
      CopyTyped<int64_t>(proto.int64_data(), out);
      break;
    case OnnxTensor::INT32:
      RETURN_IF_ERROR(check(proto.int32_data_size(), "int32_data"));
      CopyTyped<int32_t>(proto.int32_data(), out);
      break;
    case OnnxTensor::INT8:
      RETURN_IF_ERROR(check(proto.int32_data_size(), "int32_data"));
      CopyTyped<int8_t>(proto.int32_data(), out);
      break;
    case OnnxTensor::INT16:
      RETURN_IF_ERROR(check(proto.int32_data_size(), "int32_data"));
      CopyTyped<int16_t>(proto.int32_data(), out);
      break;
    case OnnxTensor::UINT8:
    case kOnnxFLOAT8E4M3FN:
    case kOnnxFLOAT8E4M3FNUZ:
    case kOnnxFLOAT8E5M2:
    case kOnnxFLOAT8E5M2FNUZ:
    case kOnnxFLOAT8E8M0:
      // The float8 types as their bit patterns.
      RETURN_IF_ERROR(check(proto.int32_data_size(), "int32_data"));
      CopyTyped<uint8_t>(proto.int32_data(), out);
      break;
    case OnnxTensor::UINT16:
      RETURN_IF_ERROR(check(proto.int32_data_size(), "int32_data"));
      CopyTyped<uint16_t>(proto.int32_data(), out);
      break;
    case OnnxTensor::UINT32:
      RETURN_IF_ERROR(check(proto.uint64_data_size(), "uint64_data"));
      CopyTyped<uint32_t>(proto.uint64_data(), out);
      break;
    case OnnxTensor::UINT64:
      RETURN_IF_ERROR(check(proto.uint64_data_size(), "uint64_data"));
      CopyTyped<uint64_t>(proto.uint64_data(), out);
      break;
    case kOnnxINT4:
    case kOnnxUINT4:
    case kOnnxFLOAT4E2M1:
    case kOnnxINT2:
    case kOnnxUINT2: {
      // Packed like raw_data, one byte in each int32.
      const int64_t want = PackedBytes(dtype, n);
      if (proto.int32_data_size() != want) {
        return TensorError(proto, absl::StrCat(
            "int32_data holds ", proto.int32_data_size(), " packed bytes, the "
            "shape needs ", want));
      }
      ASSIGN_OR_RETURN(*out, Tensor::Create(dtype, shape));
      std::string bytes(static_cast<size_t>(want), '\0');
      for (int64_t i = 0; i < want; ++i) {
        bytes[i] = static_cast<char>(proto.int32_data(static_cast<int>(i)));
      }
      UnpackSubByte(bytes.data(), out);
      break;
    }
    case OnnxTensor::BOOL:
      RETURN_IF_ERROR(check(proto.int32_data_size(), "int32_data"));
      CopyTyped<uint8_t>(proto.int32_data(), out);
      CanonicalizeBools(out);
      break;
    case OnnxTensor::FLOAT16:
    case OnnxTensor::BFLOAT16:
      RETURN_IF_ERROR(check(proto.int32_data_size(), "int32_data"));
      CopyBits16(proto.int32_data(), out);
      break;
    default:
      return TensorError(proto, "has no data");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DataType> DataTypeFromOnnx(int32_t elem_type) {
  static constexpr struct {
    int32_t onnx;
    DataType dtype;
  } kMap[] = {
      {OnnxTensor::FLOAT, DT_FLOAT},
      {OnnxTensor::FLOAT16, DT_FLOAT16},
      {OnnxTensor::BFLOAT16, DT_BFLOAT16},
      {OnnxTensor::DOUBLE, DT_DOUBLE},
      {OnnxTensor::INT8, DT_INT8},
      {OnnxTensor::INT16, DT_INT16},
      {OnnxTensor::INT32, DT_INT32},
      {OnnxTensor::INT64, DT_INT64},
      {OnnxTensor::UINT8, DT_UINT8},
      {OnnxTensor::UINT16, DT_UINT16},
      {OnnxTensor::UINT32, DT_UINT32},
      {OnnxTensor::UINT64, DT_UINT64},
      {OnnxTensor::BOOL, DT_BOOL},
      {kOnnxFLOAT8E4M3FN, DT_FLOAT8_E4M3FN},
      {kOnnxFLOAT8E4M3FNUZ, DT_FLOAT8_E4M3FNUZ},
      {kOnnxFLOAT8E5M2, DT_FLOAT8_E5M2},
      {kOnnxFLOAT8E5M2FNUZ, DT_FLOAT8_E5M2FNUZ},
      {kOnnxFLOAT8E8M0, DT_FLOAT8_E8M0},
      {kOnnxFLOAT4E2M1, DT_FLOAT4_E2M1},
      {kOnnxINT4, DT_INT4},
      {kOnnxUINT4, DT_UINT4},
      {kOnnxINT2, DT_INT2},
      {kOnnxUINT2, DT_UINT2},
  };
  for (const auto& m : kMap) {
    if (m.onnx == elem_type) return m.dtype;
  }
  return absl::UnimplementedError(absl::StrCat(
      "ONNX element type ", OnnxTypeName(elem_type), " has no sluice dtype"));
}

std::string OnnxTypeName(int32_t elem_type) {
  switch (elem_type) {
    case kOnnxFLOAT8E4M3FN: return "FLOAT8E4M3FN";
    case kOnnxFLOAT8E4M3FNUZ: return "FLOAT8E4M3FNUZ";
    case kOnnxFLOAT8E5M2: return "FLOAT8E5M2";
    case kOnnxFLOAT8E5M2FNUZ: return "FLOAT8E5M2FNUZ";
    case kOnnxUINT4: return "UINT4";
    case kOnnxINT4: return "INT4";
    case kOnnxFLOAT4E2M1: return "FLOAT4E2M1";
    case kOnnxFLOAT8E8M0: return "FLOAT8E8M0";
    case kOnnxUINT2: return "UINT2";
    case kOnnxINT2: return "INT2";
    default: break;
  }
  if (OnnxTensor::DataType_IsValid(elem_type)) {
    return OnnxTensor::DataType_Name(
        static_cast<OnnxTensor::DataType>(elem_type));
  }
  return absl::StrCat("type ", elem_type);
}

absl::StatusOr<Tensor> TensorFromOnnx(const onnx::TensorProto& proto,
                                      const std::string& base_dir,
                                      const RawDataInFile* raw_in_file) {
  absl::StatusOr<DataType> dtype = DataTypeFromOnnx(proto.data_type());
  if (!dtype.ok()) return TensorError(proto, dtype.status().message());
  if (proto.dims_size() > kMaxRank) {
    return TensorError(proto, absl::StrCat("has rank ", proto.dims_size(),
                                           ", above ", kMaxRank));
  }
  Shape shape;
  for (int64_t d : proto.dims()) {
    if (d < 0) {
      return TensorError(proto, absl::StrCat("has a negative dimension ", d));
    }
    shape.AddDim(d);
  }
  absl::StatusOr<int64_t> n = shape.NumElements();
  if (!n.ok()) return TensorError(proto, n.status().message());
  if (proto.has_segment()) {
    return TensorError(proto, "is segmented, which sluice does not read");
  }
  // The data's size is checked against the shape before the tensor is
  // allocated: a model may not make sluice allocate what it does not carry.
  Tensor t;
  if (proto.data_location() == OnnxTensor::EXTERNAL) {
    RETURN_IF_ERROR(ReadExternal(proto, base_dir, *dtype, shape, *n, &t));
    CanonicalizeBools(&t);
    return t;
  }
  if (raw_in_file != nullptr || proto.has_raw_data()) {
    const int64_t want = PackedBytes(*dtype, *n);
    const int64_t have = raw_in_file != nullptr
                             ? raw_in_file->length
                             : static_cast<int64_t>(proto.raw_data().size());
    if (have != want) {
      return TensorError(proto, absl::StrCat("raw_data holds ", have,
                                             " bytes, the tensor needs ",
                                             want));
    }
    ASSIGN_OR_RETURN(t, Tensor::Create(*dtype, shape));
    if (raw_in_file != nullptr) {
      std::string packed;
      if (IsSubByte(*dtype)) packed.resize(static_cast<size_t>(want));
      char* dst = IsSubByte(*dtype) ? packed.data()
                                    : static_cast<char*>(t.raw_data());
      RETURN_IF_ERROR(ReadRawDataInFile(proto, *raw_in_file, dst));
      if (IsSubByte(*dtype)) UnpackSubByte(packed.data(), &t);
    } else if (IsSubByte(*dtype)) {
      UnpackSubByte(proto.raw_data().data(), &t);
    } else if (t.bytes() > 0) {
      std::memcpy(t.raw_data(), proto.raw_data().data(), t.bytes());
    }
    CanonicalizeBools(&t);
    return t;
  }
  if (*n == 0) return Tensor::Create(*dtype, shape);
  RETURN_IF_ERROR(ReadTyped(proto, *dtype, shape, *n, &t));
  return t;
}

}  // namespace sluice
