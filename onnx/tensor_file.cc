#include "onnx/tensor_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "onnx/onnx_pb.h"
#include "onnx/onnx_tensor.h"

namespace sluice {

absl::StatusOr<Tensor> ReadOnnxTensorFile(const std::string& path) {
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (std::filesystem::exists(st) && !std::filesystem::is_regular_file(st)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", path, "' exists but is not a regular file"));
  }
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(absl::StrCat("cannot open '", path, "'"));
  }
  struct stat info;
  const bool too_big = fstat(fd, &info) == 0 &&
                       info.st_size > static_cast<off_t>(INT32_MAX);
  onnx::TensorProto proto;
  const bool parsed = !too_big && proto.ParseFromFileDescriptor(fd);
  close(fd);
  if (!parsed) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": not an ONNX TensorProto (it does not parse",
        too_big ? "; it is over 2 GiB" : "", ")"));
  }
  // An empty base_dir allows no external data.
  absl::StatusOr<Tensor> t = TensorFromOnnx(proto, "");
  if (!t.ok()) {
    return absl::Status(t.status().code(),
                        absl::StrCat(path, ": ", t.status().message()));
  }
  return t;
}

absl::Status WriteOnnxTensorFile(const Tensor& t, const std::string& name,
                                 const std::string& path) {
  // ONNX's element types are small integers; the one DataTypeFromOnnx maps
  // to t's dtype.
  int32_t elem = 0;
  for (int32_t e = 1; e < 64 && elem == 0; ++e) {
    absl::StatusOr<DataType> d = DataTypeFromOnnx(e);
    if (d.ok() && *d == t.dtype()) elem = e;
  }
  if (elem == 0) {
    return absl::UnimplementedError(absl::StrCat(
        "ONNX has no element type for ", DataTypeName(t.dtype())));
  }
  onnx::TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(elem);
  for (int64_t d : t.shape().dims()) proto.add_dims(d);
  const int bits = DataTypeBits(t.dtype());
  const int64_t n = t.NumElements();
  std::string* raw = proto.mutable_raw_data();
  if (bits >= 8) {
    raw->assign(static_cast<const char*>(t.raw_data()),
                static_cast<size_t>(n) * DataTypeSize(t.dtype()));
  } else {
    // One byte per element in sluice, packed low bits first in ONNX.
    const int per_byte = 8 / bits;
    const unsigned mask = (1u << bits) - 1;
    raw->assign(static_cast<size_t>((n + per_byte - 1) / per_byte), '\0');
    const uint8_t* src = static_cast<const uint8_t*>(t.raw_data());
    for (int64_t i = 0; i < n; ++i) {
      (*raw)[i / per_byte] = static_cast<char>(
          static_cast<uint8_t>((*raw)[i / per_byte]) |
          ((src[i] & mask) << (bits * (i % per_byte))));
    }
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out || !proto.SerializeToOstream(&out) || !out.flush()) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot write '", path, "'"));
  }
  return absl::OkStatus();
}

}  // namespace sluice
