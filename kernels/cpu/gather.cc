// Gather along one axis: output = params.shape[:axis] + indices.shape +
// params.shape[axis+1:]. Every index is checked against [-n, n) before any
// copy; a bad one is reported with its value, position and the valid range.
// Any params dtype; int32 or int64 indices.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/shape_fns.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"

namespace sluice::cpu {
namespace {

template <typename I>
absl::Status CheckIndices(const Tensor& indices, int64_t n, int axis) {
  const I* p = indices.data<I>();
  for (int64_t i = 0; i < indices.NumElements(); ++i) {
    const int64_t v = static_cast<int64_t>(p[i]);
    if (v < -n || v >= n) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Gather index ", v, " (at position ", i, " of indices) is out of "
          "range for axis ", axis, " of size ", n, " (valid: [", -n, ", ", n,
          "))"));
    }
  }
  return absl::OkStatus();
}

template <typename I>
void GatherRows(const OpKernelContext& ctx, const char* params,
                const I* indices, char* out, int64_t outer, int64_t n,
                int64_t count, int64_t row_bytes) {
  ParallelFor(ctx, outer * count, static_cast<double>(row_bytes) / 8 + 1,
              [=](int64_t b, int64_t e) {
                for (int64_t u = b; u < e; ++u) {
                  const int64_t o = u / count, j = u % count;
                  int64_t idx = static_cast<int64_t>(indices[j]);
                  if (idx < 0) idx += n;
                  std::memcpy(out + u * row_bytes,
                              params + (o * n + idx) * row_bytes, row_bytes);
                }
              });
}

class GatherKernel final : public OpKernel {
 public:
  struct Attrs {
    DataType t = DT_INVALID;
    DataType ti = DT_INVALID;
    int64_t axis_attr = 0;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.t, node.attrs().GetType("T"));
    ASSIGN_OR_RETURN(a.ti, node.attrs().GetType("Tindices"));
    ASSIGN_OR_RETURN(a.axis_attr, node.attrs().GetInt("axis"));
    return a;
  }
  GatherKernel(const Node& node, Attrs attrs)
      : OpKernel(node), attrs_(std::move(attrs)) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& params = ctx->input(0);
    const Tensor& indices = ctx->input(1);
    const DataType t = attrs_.t;
    const DataType ti = attrs_.ti;
    RETURN_IF_ERROR(CheckDtype(params, t, "input params"));
    RETURN_IF_ERROR(CheckDtype(indices, ti, "input indices"));
    if (ti != DT_INT32 && ti != DT_INT64) return UnsupportedDtype(ti);
    const int64_t axis_attr = attrs_.axis_attr;
    ASSIGN_OR_RETURN(Shape shape, ::sluice::GatherShape(
                                      params.shape(), indices.shape(),
                                      axis_attr));
    ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_attr, params.rank()));
    const int64_t n = params.dim(axis);
    if (ti == DT_INT32) {
      RETURN_IF_ERROR(CheckIndices<int32_t>(indices, n, axis));
    } else {
      RETURN_IF_ERROR(CheckIndices<int64_t>(indices, n, axis));
    }
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    if (y->NumElements() == 0) return absl::OkStatus();
    int64_t outer = 1, row_bytes = static_cast<int64_t>(DataTypeSize(t));
    for (int d = 0; d < axis; ++d) outer *= params.dim(d);
    for (int d = axis + 1; d < params.rank(); ++d) row_bytes *= params.dim(d);
    const char* in = static_cast<const char*>(params.raw_data());
    char* out = static_cast<char*>(y->raw_data());
    if (ti == DT_INT32) {
      GatherRows(*ctx, in, indices.data<int32_t>(), out, outer, n,
                 indices.NumElements(), row_bytes);
    } else {
      GatherRows(*ctx, in, indices.data<int64_t>(), out, outer, n,
                 indices.NumElements(), row_bytes);
    }
    return absl::OkStatus();
  }

 private:
  const Attrs attrs_;
};

}  // namespace

void RegisterGatherKernels(KernelRegistry* r) {
  r->Register(CpuKernel("Gather",
                        {{"T", CpuAllTypes()}, {"Tindices", {DT_INT32, DT_INT64}}},
                        MakeKernel<GatherKernel>));
}

}  // namespace sluice::cpu
