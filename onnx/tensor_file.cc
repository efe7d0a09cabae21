#include "onnx/tensor_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

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

}  // namespace sluice
