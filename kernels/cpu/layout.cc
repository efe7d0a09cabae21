// Layout changes for NHWC nodes on the CPU (layout.h).
#include "kernels/cpu/layout.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/cpu/strided_copy.h"

namespace sluice::cpu {

Shape PermutedShape(const Shape& s, const std::array<int64_t, 4>& perm) {
  return Shape({s.dim(perm[0]), s.dim(perm[1]), s.dim(perm[2]), s.dim(perm[3])});
}

void PermuteInto(const OpKernelContext& ctx, const Tensor& in,
                 const std::array<int64_t, 4>& perm, const Tensor& out) {
  // Row-major strides of the input, read in the output's order.
  int64_t in_strides[4];
  in_strides[3] = 1;
  for (int d = 2; d >= 0; --d) in_strides[d] = in_strides[d + 1] * in.dim(d + 1);
  int64_t dims[4], strides[4];
  for (int d = 0; d < 4; ++d) {
    dims[d] = in.dim(perm[d]);
    strides[d] = in_strides[perm[d]];
  }
  StridedCopy<uint32_t>(ctx, reinterpret_cast<const uint32_t*>(in.data<float>()),
                        reinterpret_cast<uint32_t*>(out.data<float>()), dims,
                        strides);
}

absl::StatusOr<Tensor> PermutedTemp(OpKernelContext* ctx, const Tensor& t,
                                    const std::array<int64_t, 4>& perm) {
  if (t.dtype() != DT_FLOAT || t.rank() != 4) {
    return absl::InvalidArgumentError(absl::StrCat(
        "an NHWC tensor must be rank-4 float32 here, got ",
        DataTypeName(t.dtype()), t.shape().DebugString()));
  }
  ASSIGN_OR_RETURN(Tensor out,
                   ctx->allocate_temp(DT_FLOAT, PermutedShape(t.shape(), perm)));
  PermuteInto(*ctx, t, perm, out);
  return out;
}

}  // namespace sluice::cpu
