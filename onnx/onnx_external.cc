// ONNX external data that is mapped or read with ReadExternalTensor, its
// range kept for the importer.
#include "onnx/onnx_external.h"

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "core/external_data.h"
#include "core/status_macros.h"
#include "onnx/onnx_tensor.h"

namespace sluice {
namespace {

using OnnxTensor = onnx::TensorProto;

// The tensor's shape, checked as TensorFromOnnx checks it.
absl::StatusOr<Shape> OnnxShape(const OnnxTensor& proto) {
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
  return shape;
}

// The location, offset and length entries; length -1 when absent.
absl::StatusOr<ExternalData> ParseEntries(const OnnxTensor& proto) {
  ExternalData ext;
  ext.set_length(-1);
  for (const auto& entry : proto.external_data()) {
    if (entry.key() == "location") {
      ext.set_path(entry.value());
      continue;
    }
    if (entry.key() != "offset" && entry.key() != "length") continue;
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(entry.value().c_str(), &end, 10);
    if (errno != 0 || end == entry.value().c_str() || *end != '\0' || v < 0) {
      return TensorError(proto,
                         absl::StrCat("external data ", entry.key(), " '",
                                      entry.value(), "' is not a byte count"));
    }
    if (entry.key() == "offset") ext.set_offset(v);
    if (entry.key() == "length") ext.set_length(v);
  }
  return ext;
}

// Fills in a missing length (the rest of the file) and checks the range
// against the tensor's size and the file's.
absl::Status CheckRange(const OnnxTensor& proto, const std::string& path,
                        int64_t want, ExternalData* ext) {
  std::error_code ec;
  const uintmax_t file_size = std::filesystem::file_size(path, ec);
  if (ec) {
    return absl::NotFoundError(
        absl::StrCat("ONNX tensor '", proto.name(), "': external data file '",
                     path, "' cannot be read: ", ec.message()));
  }
  if (ext->length() < 0) {
    ext->set_length(static_cast<int64_t>(file_size) - ext->offset());
  }
  if (ext->length() != want) {
    return TensorError(proto, absl::StrCat("external data holds ",
                                           ext->length(),
                                           " bytes, the tensor needs ", want));
  }
  if (static_cast<uintmax_t>(ext->offset()) > file_size ||
      static_cast<uintmax_t>(ext->length()) > file_size - ext->offset()) {
    return TensorError(
        proto, absl::StrCat("external data range [", ext->offset(), ", ",
                            ext->offset() + ext->length(),
                            ") is past the end of '", path, "' (", file_size,
                            " bytes)"));
  }
  return absl::OkStatus();
}

}  // namespace

bool OnnxExternalBytesAreTensorBytes(DataType dtype) {
  switch (dtype) {
    case DT_FLOAT:
    case DT_FLOAT16:
    case DT_BFLOAT16:
    case DT_DOUBLE:
    case DT_INT8:
    case DT_INT32:
    case DT_INT64:
    case DT_UINT8:
      return true;
    default:
      return false;
  }
}

absl::StatusOr<std::optional<OnnxExternalTensor>> ReadOnnxExternalTensor(
    const onnx::TensorProto& proto, const std::string& base_dir) {
  if (proto.data_location() != OnnxTensor::EXTERNAL) return std::nullopt;
  absl::StatusOr<DataType> dtype = DataTypeFromOnnx(proto.data_type());
  if (!dtype.ok() || !OnnxExternalBytesAreTensorBytes(*dtype)) {
    return std::nullopt;
  }
  ASSIGN_OR_RETURN(Shape shape, OnnxShape(proto));
  ASSIGN_OR_RETURN(ExternalData ext, ParseEntries(proto));
  ASSIGN_OR_RETURN(const std::string path,
                   ExternalPath(proto, base_dir, ext.path()));
  const int64_t want =
      *shape.NumElements() * static_cast<int64_t>(DataTypeSize(*dtype));
  RETURN_IF_ERROR(CheckRange(proto, path, want, &ext));
  absl::StatusOr<Tensor> t =
      ReadExternalTensor(ext, base_dir, *dtype, shape, ExternalDataMode::kMap);
  if (!t.ok()) {  // the file changed since CheckRange, or cannot be opened
    return absl::Status(t.status().code(),
                        absl::StrCat("ONNX tensor '", proto.name(),
                                     "': ", t.status().message()));
  }
  return OnnxExternalTensor{*std::move(t), std::move(ext)};
}

absl::StatusOr<ValuePtr> AddInitializer(GraphEmitter& em,
                                        const onnx::TensorProto& proto,
                                        const std::string& base_dir,
                                        bool reference_external,
                                        const RawDataInFile* raw_in_file) {
  std::optional<OnnxExternalTensor> ext;
  // Embedded: the bytes are copied into the GraphDef anyway, so they are
  // read as before rather than mapped (a snapshot of the file).
  if (reference_external) {
    ASSIGN_OR_RETURN(ext, ReadOnnxExternalTensor(proto, base_dir));
  }
  if (!ext.has_value()) {
    ASSIGN_OR_RETURN(Tensor t, TensorFromOnnx(proto, base_dir, raw_in_file));
    return em.AddConstant(std::move(t), proto.name());
  }
  ValuePtr v = em.AddConstant(std::move(ext->tensor), proto.name());
  v->external = std::move(ext->range);
  return v;
}

}  // namespace sluice
