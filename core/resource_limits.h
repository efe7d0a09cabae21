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
// EffectiveResourceLimits reads them from a RuntimeConfig. A plain struct of
// values and stateless functions, thread-safe; FoldBudget is not.
#ifndef SLUICE_CORE_RESOURCE_LIMITS_H_
#define SLUICE_CORE_RESOURCE_LIMITS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/dtype.h"
#include "core/shape.h"
#include "proto/config.pb.h"

namespace sluice {

struct ResourceLimits {
  // The largest tensor sluice makes from a description rather than from
  // data: a random input, a constant the ONNX importer must make (a mask,
  // an index table). 1 GiB.
  int64_t max_created_tensor_bytes = int64_t{1} << 30;
  // Constant folding (the ONNX importer's, onnx/graph_emitter.h, and the
  // optimizer's constant_folding pass) makes no constant larger than this,
  // unless it is no larger than the fold's inputs together (a Transpose of
  // a weight). 16 MiB.
  int64_t max_folded_constant_bytes = int64_t{16} << 20;
  // The total bytes of constants one folding run (an ONNX import, its
  // subgraphs included; one constant_folding pass) may create. Past it, the
  // rest of the computation is left in the graph to run at run time. 2 GiB.
  int64_t max_folded_bytes = int64_t{2} << 30;
};

// The two folding limits of one folding run: each fold asks Take before it
// makes anything. Not thread-safe; one per import or pass.
//
//   FoldBudget budget(limits);
//   if (!budget.Take(out_bytes, out_bytes, in_bytes)) continue;  // left as a node
class FoldBudget {
 public:
  explicit FoldBudget(const ResourceLimits& limits)
      : max_constant_bytes_(limits.max_folded_constant_bytes),
        bytes_left_(limits.max_folded_bytes) {}

  // Whether a fold whose largest result is `largest_bytes`, whose results
  // are `total_bytes` together and whose inputs are `input_bytes` together
  // may be made: largest_bytes within max(max_folded_constant_bytes,
  // input_bytes), and total_bytes within what is left of max_folded_bytes.
  // When it may, total_bytes is charged. A negative size (unknown) is
  // refused.
  bool Take(int64_t largest_bytes, int64_t total_bytes, int64_t input_bytes);
  // Whether Take would succeed; charges nothing.
  bool Fits(int64_t largest_bytes, int64_t total_bytes,
            int64_t input_bytes) const;
  // Take for one result of `dtype` and `shape` made from inputs of
  // `input_bytes`; false also when the shape is not fully defined.
  bool Take(DataType dtype, const Shape& shape, int64_t input_bytes = 0);

  int64_t bytes_left() const { return bytes_left_; }

 private:
  int64_t max_constant_bytes_;
  int64_t bytes_left_;
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

// config.resource_limits with these defaults for the fields left 0, and
// the deprecated fields (RuntimeConfig.max_folded_constant_bytes,
// resource_limits.max_import_folded_bytes) read as the fields that
// replaced them when those are 0.
ResourceLimits EffectiveResourceLimits(const RuntimeConfig& config);

}  // namespace sluice

#endif  // SLUICE_CORE_RESOURCE_LIMITS_H_
