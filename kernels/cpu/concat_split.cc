// Concat and Split along one axis. Both view each tensor as [outer, chunk]
// with chunk = dims[axis:] and move chunks with memcpy. Any dtype. Concat
// splits its output over the intra-op pool in blocks of bytes (so a channel
// concat at batch 1, one row, splits too); Split splits over rows.
#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/runtime_params.h"
#include "graph/shape_fns.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"

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

class ConcatKernel final : public OpKernel {
 public:
  struct Attrs {
    DataType t = DT_INVALID;
    int64_t axis_attr = 0;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.t, node.attrs().GetType("T"));
    ASSIGN_OR_RETURN(a.axis_attr, node.attrs().GetInt("axis"));
    return a;
  }
  ConcatKernel(const Node& node, Attrs attrs)
      : OpKernel(node), attrs_(std::move(attrs)) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const DataType t = attrs_.t;
    const int64_t axis_attr = attrs_.axis_attr;
    std::vector<Shape> shapes;
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      RETURN_IF_ERROR(
          CheckDtype(ctx->input(i), t, absl::StrCat("input ", i)));
      shapes.push_back(ctx->input(i).shape());
    }
    ASSIGN_OR_RETURN(Shape shape, ::sluice::ConcatShape(shapes, axis_attr));
    ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_attr, shape.rank()));
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    if (y->NumElements() == 0) return absl::OkStatus();
    const int64_t outer = Outer(shape, axis);
    const int64_t out_chunk = ChunkBytes(shape, axis, t);
    std::vector<int64_t> chunks;
    for (const Shape& s : shapes) chunks.push_back(ChunkBytes(s, axis, t));
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

 private:
  const Attrs attrs_;
};

// kDynamic (DynamicSplit): the sizes come from input 1.
template <bool kDynamic>
class SplitKernel final : public OpKernel {
 public:
  struct Attrs {
    DataType t = DT_INVALID;
    int64_t axis_attr = 0;
    int64_t num_split = 0;
    std::vector<int64_t> sizes;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.t, node.attrs().GetType("T"));
    ASSIGN_OR_RETURN(a.axis_attr, node.attrs().GetInt("axis"));
    ASSIGN_OR_RETURN(a.num_split, node.attrs().GetInt("num_split"));
    if constexpr (!kDynamic) {
      ASSIGN_OR_RETURN(a.sizes, node.attrs().GetIntList("sizes"));
    }
    return a;
  }
  SplitKernel(const Node& node, Attrs attrs)
      : OpKernel(node), attrs_(std::move(attrs)) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    const DataType t = attrs_.t;
    RETURN_IF_ERROR(CheckDtype(x, t, "input value"));
    const int64_t axis_attr = attrs_.axis_attr;
    const int64_t num_split = attrs_.num_split;
    std::vector<int64_t> sizes = attrs_.sizes;
    if constexpr (kDynamic) {
      ASSIGN_OR_RETURN(sizes, IntParamValues(ctx->input(1), "split"));
    }
    ASSIGN_OR_RETURN(std::vector<Shape> shapes,
                     ::sluice::SplitShapes(x.shape(), axis_attr, num_split,
                                           sizes));
    if (static_cast<int>(shapes.size()) != ctx->num_outputs()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Split makes ", shapes.size(), " outputs but the node has ",
          ctx->num_outputs()));
    }
    ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_attr, x.rank()));
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

 private:
  const Attrs attrs_;
};

}  // namespace

void RegisterConcatSplitKernels(KernelRegistry* r) {
  r->Register(CpuKernel("Concat", {{"T", CpuAllTypes()}},
                        MakeKernel<ConcatKernel>));
  r->Register(CpuKernel("Split", {{"T", CpuAllTypes()}},
                        MakeKernel<SplitKernel<false>>));
  r->Register(CpuKernel("DynamicSplit", {{"T", CpuAllTypes()}},
                        MakeKernel<SplitKernel<true>>));
}

}  // namespace sluice::cpu
