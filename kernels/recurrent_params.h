// The parameters of the Recurrent op (ONNX RNN, GRU and LSTM; graph/ops and
// docs/ops.md), shared by its CPU and CUDA kernels: the attributes parsed
// once per node and the input shapes checked once per call.
//
//   ASSIGN_OR_RETURN(RecurrentAttrs a, ParseRecurrentAttrs(node));
//   ASSIGN_OR_RETURN(RecurrentSizes z, CheckRecurrentShapes(a, shapes, lens));
//   double v = ApplyActivation(a.acts[0], x);
//
// Value types; thread-compatible. The cell's math (activations, sizes) is in
// kernels/recurrent_cell.h, which the .cu files include.
#ifndef SLUICE_KERNELS_RECURRENT_PARAMS_H_
#define SLUICE_KERNELS_RECURRENT_PARAMS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "core/shape.h"
#include "graph/graph.h"
#include "kernels/recurrent_cell.h"

namespace sluice {

struct RecurrentAttrs {
  RecurrentCell cell = RecurrentCell::kRnn;
  int64_t gates = 1;  // 1, 3 or 4
  int64_t dirs = 1;   // 2 for "bidirectional"
  bool reverse = false;  // the single direction runs backwards
  std::vector<Activation> acts;  // per direction, per cell slot
  float clip = 0;
  bool linear_before_reset = false;
  bool input_forget = false;

  // Activations per direction: 1 (RNN), 2 (GRU) or 3 (LSTM).
  int slots() const { return static_cast<int>(acts.size() / dirs); }
};

// The attributes of a Recurrent node; INVALID_ARGUMENT names what is wrong
// (an unknown cell, direction or activation, a wrong activation count).
absl::StatusOr<RecurrentAttrs> ParseRecurrentAttrs(const Node& node);

// Checks the eight input shapes (x, w, r, b, sequence_lens, initial_h,
// initial_c, p) against each other and every sequence length (host memory,
// `b` of them) against the step count.
absl::StatusOr<RecurrentSizes> CheckRecurrentShapes(
    const RecurrentAttrs& attrs, const std::vector<Shape>& shapes,
    const int32_t* lens);

}  // namespace sluice

#endif  // SLUICE_KERNELS_RECURRENT_PARAMS_H_
