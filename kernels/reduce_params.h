// The setup of ReduceSum, ReduceMean, ReduceMax, ReduceMin and ReduceProd
// and their Dynamic forms (axes from input 1, host memory), written once
// for the CPU kernel (kernels/cpu/reduce.cc) and the CUDA kernel
// (kernels/cuda/nn_kernels.cc): the attributes parsed when the kernel is
// made; each call the axes read and checked, which dims are reduced and
// the output's shape. Both devices refuse the same inputs with the same
// messages. Device-neutral.
//
//   ASSIGN_OR_RETURN(ReducePlanning p, PlanReduce(attrs(), x, &ctx->input(1)));
//   if (p.pass_through) { ctx->set_output(0, x); return absl::OkStatus(); }
//
// Value types and pure functions; thread-safe.
#ifndef SLUICE_KERNELS_REDUCE_PARAMS_H_
#define SLUICE_KERNELS_REDUCE_PARAMS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "core/shape.h"
#include "core/tensor.h"
#include "graph/graph.h"

namespace sluice {

struct ReduceAttrs {
  std::vector<int64_t> axes;  // empty: every axis
  bool keepdims = false;
  bool dynamic = false;               // the axes are input 1
  bool noop_with_empty_axes = false;  // Dynamic: empty axes pass x through
  bool mean = false;                  // ReduceMean
};
absl::StatusOr<ReduceAttrs> ParseReduceAttrs(const Node& node);

struct ReducePlanning {
  bool pass_through = false;  // the output is x itself
  std::vector<bool> reduced;  // per dim of x
  Shape out_shape;
};
// `axes` is input 1 of a Dynamic form (host memory), else unused.
// INVALID_ARGUMENT for an axis out of range or listed twice, or an integer
// ReduceMean over an empty axis (there is no mean of nothing).
absl::StatusOr<ReducePlanning> PlanReduce(const ReduceAttrs& a, const Tensor& x,
                                          const Tensor* axes);

}  // namespace sluice

#endif  // SLUICE_KERNELS_REDUCE_PARAMS_H_
