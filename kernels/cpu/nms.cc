// NonMaxSuppression: for each (batch, class), the boxes above the score
// threshold (NaN scores never) in order of decreasing score (ties: lower
// index first), each kept unless its IoU with a box already kept exceeds
// the IoU threshold, at most max_output_boxes_per_class of them. Output rows are
// [batch, class, box]. Boxes are [y1, x1, y2, x2] (any corner order), or
// [x_center, y_center, width, height] with center_point_box = 1. An empty
// parameter input takes the default: 0 boxes, IoU threshold 0, no score
// threshold. The GPU kernel (kernels/cuda/nms.h) keeps the same boxes: this
// file is built with -ffp-contract=off so that the IoU's products and sums
// round one by one there too.
#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/launch_kernel.h"
#include "kernels/vision_params.h"

namespace sluice::cpu {
namespace {

struct Box {
  float x_min, x_max, y_min, y_max;
};

Box ToBox(const float* b, bool center) {
  if (center) {
    return {b[0] - b[2] / 2, b[0] + b[2] / 2, b[1] - b[3] / 2,
            b[1] + b[3] / 2};
  }
  return {std::min(b[1], b[3]), std::max(b[1], b[3]), std::min(b[0], b[2]),
          std::max(b[0], b[2])};
}

bool Suppresses(const Box& a, const Box& b, float iou_threshold) {
  const float ix_min = std::max(a.x_min, b.x_min);
  const float ix_max = std::min(a.x_max, b.x_max);
  if (ix_max <= ix_min) return false;
  const float iy_min = std::max(a.y_min, b.y_min);
  const float iy_max = std::min(a.y_max, b.y_max);
  if (iy_max <= iy_min) return false;
  const float inter = (ix_max - ix_min) * (iy_max - iy_min);
  const float area_a = (a.x_max - a.x_min) * (a.y_max - a.y_min);
  const float area_b = (b.x_max - b.x_min) * (b.y_max - b.y_min);
  const float uni = area_a + area_b - inter;
  if (inter <= 0 || area_a <= 0 || area_b <= 0 || uni <= 0) return false;
  return inter / uni > iou_threshold;
}

class NmsKernel final : public LaunchKernel<NmsAttrs, ParseNmsAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& boxes = ctx->input(0);
    const Tensor& scores = ctx->input(1);
    ASSIGN_OR_RETURN(NmsPlan p, PlanNms(boxes, scores, ctx->input(2),
                                        ctx->input(3), ctx->input(4)));
    const bool center = attrs().center;
    const int64_t n = p.boxes;
    std::vector<std::array<int64_t, 3>> picked;
    std::vector<int64_t> order, kept;
    for (int64_t b = 0; b < p.batches; ++b) {
      const float* bx = boxes.data<float>() + b * n * 4;
      for (int64_t c = 0; c < p.classes; ++c) {
        const float* sc = scores.data<float>() + (b * p.classes + c) * n;
        order.clear();
        for (int64_t i = 0; i < n; ++i) {
          if (std::isnan(sc[i])) continue;
          if (!p.thresholded || sc[i] > p.score_threshold) order.push_back(i);
        }
        std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
          return sc[x] > sc[y];
        });
        kept.clear();
        for (int64_t i : order) {
          if (static_cast<int64_t>(kept.size()) >= p.max_per_class) break;
          const Box cand = ToBox(bx + i * 4, center);
          bool keep = true;
          for (int64_t k : kept) {
            if (Suppresses(cand, ToBox(bx + k * 4, center), p.iou_threshold)) {
              keep = false;
              break;
            }
          }
          if (keep) {
            kept.push_back(i);
            picked.push_back({b, c, i});
          }
        }
      }
    }
    const int64_t rows = static_cast<int64_t>(picked.size());
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape({rows, 3})));
    int64_t* out = y->data<int64_t>();
    for (int64_t r = 0; r < rows; ++r) {
      for (int i = 0; i < 3; ++i) out[r * 3 + i] = picked[r][i];
    }
    return absl::OkStatus();
  }
};

}  // namespace

void RegisterNmsKernels(KernelRegistry* r) {
  r->Register(CpuKernel("NonMaxSuppression", {}, MakeKernel<NmsKernel>));
}

}  // namespace sluice::cpu
