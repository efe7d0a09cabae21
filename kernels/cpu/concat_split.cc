// Concat and Split along one axis. Both view each tensor as [outer, chunk]
// with chunk = dims[axis:] and move chunks with memcpy. Any dtype. Concat
// splits its output over the intra-op pool in blocks of bytes (so a channel
// concat at batch 1, one row, splits too); Split splits over rows.
#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/array_params.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/launch_kernel.h"

namespace sluice::cpu {
namespace {

// Bytes per outer index of `shape` from `axis` on.
int64_t ChunkBytes(const Shape& shape, int axis, DataType t) {
  int64_t n = static_cast<int64_t>(DataTypeSize(t));
  for (int d = axis; d < shape.rank(); ++d) n *= shape.dim(d);
  return n;
}

// Concat copies blocks of this many output bytes per task.
constexpr int64_t kConcatBlockBytes = int64_t{16} << 10;

int64_t Outer(const Shape& shape, int axis) {
  int64_t n = 1;
  for (int d = 0; d < axis; ++d) n *= shape.dim(d);
  return n;
}

class ConcatKernel final : public LaunchKernel<ConcatAttrs, ParseConcatAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    ASSIGN_OR_RETURN(ConcatPlan p, PlanConcat(attrs(), *ctx));
    const Shape& shape = p.out_shape;
    const int axis = p.axis;
    const DataType t = ctx->input(0).dtype();
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    if (y->NumElements() == 0) return absl::OkStatus();
    const int64_t outer = Outer(shape, axis);
    const int64_t out_chunk = ChunkBytes(shape, axis, t);
    std::vector<int64_t> chunks;
    for (const Shape& s : p.in_shapes) chunks.push_back(ChunkBytes(s, axis, t));
    // Where each input's part of an output row starts (bytes).
    std::vector<int64_t> starts(chunks.size() + 1, 0);
    for (size_t i = 0; i < chunks.size(); ++i) {
      starts[i + 1] = starts[i] + chunks[i];
    }
    char* out = static_cast<char*>(y->raw_data());
    // The output is cut into blocks of bytes, not rows: at batch 1 a
    // channel concat has one row (outer == 1) and must still split.
    const int64_t total = outer * out_chunk;
    const int64_t blocks = (total + kConcatBlockBytes - 1) / kConcatBlockBytes;
    ParallelFor(*ctx, blocks, kConcatBlockBytes / 8.0,
                [&](int64_t b, int64_t e) {
                  int64_t pos = b * kConcatBlockBytes;
                  const int64_t end = std::min(total, e * kConcatBlockBytes);
                  while (pos < end) {
                    const int64_t o = pos / out_chunk, at = pos % out_chunk;
                    // The input whose part of row o holds byte `at`.
                    const size_t i = static_cast<size_t>(
                        std::upper_bound(starts.begin(), starts.end(), at) -
                        starts.begin() - 1);
                    const int64_t from = at - starts[i];
                    const int64_t n =
                        std::min(chunks[i] - from, end - pos);
                    const char* src =
                        static_cast<const char*>(ctx->input(i).raw_data());
                    std::memcpy(out + pos, src + o * chunks[i] + from, n);
                    pos += n;
                  }
                });
    return absl::OkStatus();
  }
};

// Split, and DynamicSplit, whose sizes come from input 1.
template <absl::StatusOr<SplitAttrs> (*Parse)(const Node&)>
class SplitKernel final : public LaunchKernel<SplitAttrs, Parse> {
 public:
  using LaunchKernel<SplitAttrs, Parse>::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    const DataType t = x.dtype();
    ASSIGN_OR_RETURN(SplitPlan p, PlanSplit(this->attrs(), *ctx));
    const std::vector<Shape>& shapes = p.out_shapes;
    const int axis = p.axis;
    const int64_t outer = Outer(x.shape(), axis);
    const int64_t in_chunk = ChunkBytes(x.shape(), axis, t);
    const char* in = static_cast<const char*>(x.raw_data());
    int64_t offset = 0;  // bytes into each input chunk
    for (size_t i = 0; i < shapes.size(); ++i) {
      ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(i, shapes[i]));
      const int64_t chunk = ChunkBytes(shapes[i], axis, t);
      char* out = static_cast<char*>(y->raw_data());
      if (chunk > 0) {
        for (int64_t o = 0; o < outer; ++o) {
          std::memcpy(out + o * chunk, in + o * in_chunk + offset, chunk);
        }
      }
      offset += chunk;
    }
    return absl::OkStatus();
  }
};

}  // namespace

void RegisterConcatSplitKernels(KernelRegistry* r) {
  r->Register(CpuKernel("Concat", {{"T", CpuAllTypes()}},
                        MakeKernel<ConcatKernel>));
  r->Register(CpuKernel("Split", {{"T", CpuAllTypes()}},
                        MakeKernel<SplitKernel<ParseSplitAttrs>>));
  r->Register(CpuKernel("DynamicSplit", {{"T", CpuAllTypes()}},
                        MakeKernel<SplitKernel<ParseDynamicSplitAttrs>>));
}

}  // namespace sluice::cpu
