// Host launchers for NonMaxSuppression on the GPU (the CPU kernel,
// kernels/cpu/nms.cc, says what it computes). Every (batch, class) is a
// segment of `boxes` candidates:
//   1. each candidate gets a 64-bit key (segment, then score descending;
//      those at or below the score threshold, and NaN scores, last) and
//      CUB's radix sort orders them, stable, so equal scores keep index
//      order, as on the CPU;
//   2. one block a segment walks its candidates in tiles of 64: a tile's
//      candidates are checked against the boxes kept so far in parallel,
//      their IoUs with each other go into a 64 x 64 bit mask, and one
//      thread then keeps them greedily in score order;
//   3. the kept counts are summed (CUB's scan) and the total read back by
//      the OpKernel (its one host wait), which allocates [total, 3];
//   4. each segment writes its rows [batch, class, box].
// The IoU is computed with each product, sum and quotient rounded on its
// own, as kernels/cpu/nms.cc (built with -ffp-contract=off) does, so the
// two keep the same boxes.
//
//   NmsProblem p{batches, classes, boxes, max_per_class, iou, thresholded,
//                score_threshold, center};
//   ASSIGN_OR_RETURN(size_t bytes, NmsScratchBytes(p));
//   RETURN_IF_ERROR(LaunchNmsSelect(boxes, scores, p, scratch, bytes, s));
//   ASSIGN_OR_RETURN(const int64_t* total, NmsTotal(p, scratch));
//   ASSIGN_OR_RETURN(uint64_t rows, ReadDeviceFlag(gpu, total));
//   RETURN_IF_ERROR(LaunchNmsWrite(p, scratch, y, s));
//
// Stateless; thread-safe.
#ifndef SLUICE_KERNELS_CUDA_NMS_H_
#define SLUICE_KERNELS_CUDA_NMS_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cuda_runtime_api.h"

namespace sluice::cuda {

struct NmsProblem {
  int64_t batches = 0;
  int64_t classes = 0;
  int64_t boxes = 0;          // candidates per batch (boxes [B, N, 4])
  int64_t max_per_class = 0;  // > 0
  float iou_threshold = 0;
  bool thresholded = false;
  float score_threshold = 0;
  bool center = false;        // [xc, yc, w, h] instead of [y1, x1, y2, x2]
};

// Scratch bytes for `p` (batches * classes * boxes > 0); UNIMPLEMENTED when
// a segment has 2^31 boxes or more.
absl::StatusOr<size_t> NmsScratchBytes(const NmsProblem& p);

// Steps 1-3 above: boxes [B, N, 4] and scores [B, C, N], float32 on the GPU.
absl::Status LaunchNmsSelect(const float* boxes, const float* scores,
                             const NmsProblem& p, void* scratch,
                             size_t scratch_bytes, cudaStream_t stream);

// Where LaunchNmsSelect leaves the number of rows (one int64 in `scratch`).
absl::StatusOr<const int64_t*> NmsTotal(const NmsProblem& p,
                                        const void* scratch);

// Step 4: out [total, 3] int64 rows, batch by batch, class by class, each
// class's boxes in the order they were kept.
absl::Status LaunchNmsWrite(const NmsProblem& p, const void* scratch,
                            int64_t* out, cudaStream_t stream);

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_NMS_H_
