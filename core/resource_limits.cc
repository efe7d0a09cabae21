#include "core/resource_limits.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "core/byte_size.h"
#include "core/status_macros.h"

namespace sluice {

absl::StatusOr<int64_t> CreatedTensorBytes(DataType dtype, const Shape& shape) {
  ASSIGN_OR_RETURN(int64_t n, shape.NumElements());
  const int64_t size = static_cast<int64_t>(DataTypeSize(dtype));
  if (size > 0 && n > std::numeric_limits<int64_t>::max() / size) {
    return absl::InvalidArgumentError(
        absl::StrCat(DataTypeName(dtype), shape.DebugString(),
                     " has more bytes than an int64 counts"));
  }
  return n * size;
}

absl::Status CheckCreatedTensor(const ResourceLimits& limits,
                                absl::string_view what, DataType dtype,
                                const Shape& shape) {
  absl::StatusOr<int64_t> bytes = CreatedTensorBytes(dtype, shape);
  if (!bytes.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", bytes.status().message()));
  }
  if (*bytes <= limits.max_created_tensor_bytes) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      what, ": ", DataTypeName(dtype), shape.DebugString(), " is ",
      FormatBytes(*bytes), ", over the limit of ",
      FormatBytes(limits.max_created_tensor_bytes),
      " for a tensor sluice creates (raise "
      "resource_limits.max_created_tensor_bytes in the config)"));
}

}  // namespace sluice
