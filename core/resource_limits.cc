#include "core/resource_limits.h"

#include <algorithm>
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

bool FoldBudget::Fits(int64_t largest_bytes, int64_t total_bytes,
                      int64_t input_bytes) const {
  return largest_bytes >= 0 && total_bytes >= 0 &&
         largest_bytes <= std::max(max_constant_bytes_, input_bytes) &&
         total_bytes <= bytes_left_;
}

bool FoldBudget::Take(int64_t largest_bytes, int64_t total_bytes,
                      int64_t input_bytes) {
  if (!Fits(largest_bytes, total_bytes, input_bytes)) return false;
  bytes_left_ -= total_bytes;
  return true;
}

bool FoldBudget::Take(DataType dtype, const Shape& shape,
                      int64_t input_bytes) {
  absl::StatusOr<int64_t> bytes = CreatedTensorBytes(dtype, shape);
  return bytes.ok() && Take(*bytes, *bytes, input_bytes);
}

ResourceLimits EffectiveResourceLimits(const RuntimeConfig& config) {
  ResourceLimits limits;
  const ResourceLimitsConfig& c = config.resource_limits();
  if (c.max_created_tensor_bytes() > 0) {
    limits.max_created_tensor_bytes = c.max_created_tensor_bytes();
  }
  if (c.max_folded_constant_bytes() > 0) {
    limits.max_folded_constant_bytes = c.max_folded_constant_bytes();
  } else if (config.max_folded_constant_bytes() > 0) {  // deprecated
    limits.max_folded_constant_bytes = config.max_folded_constant_bytes();
  }
  if (c.max_folded_bytes() > 0) {
    limits.max_folded_bytes = c.max_folded_bytes();
  } else if (c.max_import_folded_bytes() > 0) {  // deprecated
    limits.max_folded_bytes = c.max_import_folded_bytes();
  }
  return limits;
}

}  // namespace sluice
