// Parameters that kernels read from host-memory input tensors, shared by the
// CPU kernels and the CUDA kernels that take the same inputs in host memory
// (host_memory_inputs), so both check them alike and say the same thing
// about bad ones. CUDA-free.
//
//   ASSIGN_OR_RETURN(int64_t size, HostScalarInt(ctx->input(0), "the window size"));
//   ASSIGN_OR_RETURN(std::vector<int64_t> depth, HostInt64s(ctx->input(1), "depth"));
//
// Stateless functions; thread-safe.
#ifndef SLUICE_KERNELS_HOST_PARAMS_H_
#define SLUICE_KERNELS_HOST_PARAMS_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/tensor.h"

namespace sluice {

// The single integer in `t` (one element), int32 or int64; INVALID_ARGUMENT
// naming `what` otherwise.
absl::StatusOr<int64_t> HostScalarInt(const Tensor& t, absl::string_view what);

// Each element of a numeric tensor as int64 (floats truncated toward zero);
// INVALID_ARGUMENT for a float that is not a finite int64.
absl::StatusOr<std::vector<int64_t>> HostInt64s(const Tensor& t,
                                                absl::string_view what);

// Dropout runs inference only: OK unless training_mode is true with a
// nonzero ratio (UNIMPLEMENTED); INVALID_ARGUMENT for non-scalar inputs.
absl::Status CheckDropoutInference(const Tensor& ratio, const Tensor& training);

// Compress: the positions along an axis of n entries that the 1-D bool
// condition keeps (a shorter condition leaves out the rest);
// INVALID_ARGUMENT for another dtype or rank, or a kept position >= n.
absl::StatusOr<std::vector<int64_t>> CompressSelection(const Tensor& condition,
                                                       int64_t n);

// ReverseSequence: sequence_lens is int64 [batch] with every entry in
// [0, steps]; INVALID_ARGUMENT otherwise.
absl::Status CheckSequenceLens(const Tensor& lens, int64_t batch,
                               int64_t steps);

// TensorScatter: cache and update viewed as [prefix, len or steps, inner]
// around `axis`; prefix / per_batch prefixes per batch entry, each written
// from write_indices[batch entry] on.
struct TensorScatterPlan {
  int axis = 0;
  int64_t prefix = 1, len = 0, steps = 0, inner = 1, per_batch = 1;
};
// The checks of the shapes, dtypes and write_indices' length (int64, in
// host memory); INVALID_ARGUMENT naming the mismatch.
absl::StatusOr<TensorScatterPlan> PlanTensorScatter(const Tensor& cache,
                                                    const Tensor& update,
                                                    const Tensor& write_indices,
                                                    int64_t axis_attr);

}  // namespace sluice

#endif  // SLUICE_KERNELS_HOST_PARAMS_H_
