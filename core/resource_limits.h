// ResourceLimits: how much memory sluice may create from a small
// description, in one place. A tiny file or flag can ask for a huge tensor
// (a ConstantOfShape of [100000, 100000], a splat, --random-inputs for an
// input of 1e9 elements); these limits are checked before anything is
// allocated, with defaults a laptop survives and config fields
// (RuntimeConfig.resource_limits) to raise them. Data a model file holds
// (weights) is not counted: its size is the file's.
//
//   RETURN_IF_ERROR(CheckCreatedTensor(limits, "random input 'x'", dtype, shape));
//
// A plain struct of values and a stateless function; thread-safe.
#ifndef SLUICE_CORE_RESOURCE_LIMITS_H_
#define SLUICE_CORE_RESOURCE_LIMITS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/dtype.h"
#include "core/shape.h"

namespace sluice {

struct ResourceLimits {
  // The largest tensor sluice makes from a description rather than from
  // data: a random input, a constant folded at import time. 1 GiB.
  int64_t max_created_tensor_bytes = int64_t{1} << 30;
  // The total bytes of constants an ONNX import may create by folding
  // (beyond the weights the file holds). Past it, the rest of the
  // computation is left in the graph to run at run time. 2 GiB.
  int64_t max_import_folded_bytes = int64_t{2} << 30;
};

// Bytes of a `dtype` tensor of `shape`; INVALID_ARGUMENT when a dimension is
// unknown or the count overflows int64.
absl::StatusOr<int64_t> CreatedTensorBytes(DataType dtype, const Shape& shape);

// OK when a `dtype` tensor of `shape` fits limits.max_created_tensor_bytes;
// otherwise RESOURCE_EXHAUSTED: "<what>: float32[100000,100000] is 37.3 GiB,
// over the limit of 1 GiB for a tensor sluice creates (raise
// resource_limits.max_created_tensor_bytes in the config)". An overflowing
// shape is INVALID_ARGUMENT.
absl::Status CheckCreatedTensor(const ResourceLimits& limits,
                                absl::string_view what, DataType dtype,
                                const Shape& shape);

}  // namespace sluice

#endif  // SLUICE_CORE_RESOURCE_LIMITS_H_
