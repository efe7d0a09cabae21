// PoolND (max, avg, lp) and MaxPoolWithIndices over any number of spatial
// dims, [N, C, spatial...], with dilations and ceil_mode. As in the ONNX
// reference: padding never contributes to a maximum or an Lp norm; avg
// divides by the window cells inside the input, or, with count_include_pad,
// inside the explicitly padded input (not the extra cells ceil_mode adds).
// Indices are flat offsets into the input ([N, C, spatial...] row-major;
// storage_order 1: the spatial dims column-major).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/vision_shapes.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/window_nd.h"
#include "kernels/launch_kernel.h"
#include "kernels/vision_params.h"

namespace sluice::cpu {
namespace {

template <typename F>
absl::Status VisitPoolType(DataType dtype, F&& f) {
  switch (dtype) {
    case DT_INT8: return f(TypeTag<int8_t>{});
    case DT_UINT8: return f(TypeTag<uint8_t>{});
    default: return VisitArith(dtype, f);
  }
}

class PoolNdKernel final : public LaunchKernel<PoolAttrs, ParsePoolAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override;

 private:
  template <typename T>
  void Run(const Tensor& x, Tensor* y, Tensor* indices) const;
};

template <typename T>
void PoolNdKernel::Run(const Tensor& x, Tensor* y, Tensor* indices) const {
  const PoolAttrs& a = attrs();
  const size_t n = a.kernel.size();
  std::vector<int64_t> in(n), out(n), in_strides(n), col_strides(n);
  int64_t in_plane = 1, out_plane = 1, ksize = 1;
  for (size_t d = n; d-- > 0;) {
    in[d] = x.dim(2 + d);
    out[d] = y->dim(2 + d);
    in_strides[d] = in_plane;
    in_plane *= in[d];
    out_plane *= out[d];
    ksize *= a.kernel[d];
  }
  int64_t col = 1;
  for (size_t d = 0; d < n; ++d) {
    col_strides[d] = col;
    col *= in[d];
  }
  const T* src = x.data<T>();
  T* dst = y->data<T>();
  int64_t* idx_out = indices != nullptr ? indices->data<int64_t>() : nullptr;
  const int64_t planes = x.dim(0) * x.dim(1);
  std::vector<int64_t> o(n), k(n);
  for (int64_t p = 0; p < planes; ++p) {
    const T* plane = src + p * in_plane;
    std::fill(o.begin(), o.end(), 0);
    for (int64_t i = 0; i < out_plane; ++i) {
      double acc = a.mode == PoolMode::kMax
                       ? -std::numeric_limits<double>::infinity()
                       : 0.0;
      int64_t best = -1, cells = 0, padded_cells = 0;
      std::fill(k.begin(), k.end(), 0);
      for (int64_t t = 0; t < ksize; ++t) {
        int64_t off = 0, col_off = 0;
        bool inside = true, in_padded = true;
        for (size_t d = 0; d < n; ++d) {
          const int64_t c =
              o[d] * a.strides[d] - a.pads[d] + k[d] * a.dilations[d];
          if (c < -a.pads[d] || c >= in[d] + a.pads[n + d]) in_padded = false;
          if (c < 0 || c >= in[d]) inside = false;
          off += c * in_strides[d];
          col_off += c * col_strides[d];
        }
        if (in_padded) ++padded_cells;
        if (inside) {
          ++cells;
          const double v = ToDouble(plane[off]);
          if (a.mode == PoolMode::kMax) {
            if (best < 0 || v > acc || (std::isnan(v) && !std::isnan(acc))) {
              acc = v;
              best = a.storage_order == 1 ? col_off : off;
            }
          } else if (a.mode == PoolMode::kAvg) {
            acc += v;
          } else {
            acc += std::pow(std::abs(v), static_cast<double>(a.p));
          }
        }
        for (size_t d = n; d-- > 0;) {
          if (++k[d] < a.kernel[d]) break;
          k[d] = 0;
        }
      }
      if (a.mode == PoolMode::kAvg) {
        const int64_t div = a.include_pad ? padded_cells : cells;
        acc = div > 0 ? acc / static_cast<double>(div) : 0.0;
      } else if (a.mode == PoolMode::kLp) {
        acc = std::pow(acc, 1.0 / static_cast<double>(a.p));
      }
      dst[p * out_plane + i] = FromDouble<T>(acc);
      if (idx_out != nullptr) {
        idx_out[p * out_plane + i] = p * in_plane + std::max<int64_t>(best, 0);
      }
      for (size_t d = n; d-- > 0;) {
        if (++o[d] < out[d]) break;
        o[d] = 0;
      }
    }
  }
}

absl::Status PoolNdKernel::Compute(OpKernelContext* ctx) {
  const PoolAttrs& a = attrs();
  RETURN_IF_ERROR(CheckHostInputs(*ctx));
  const Tensor& x = ctx->input(0);
  const size_t n = a.kernel.size();
  RETURN_IF_ERROR(CheckRank(x, static_cast<int>(n) + 2, "pool input"));
  std::vector<int64_t> dims = {x.dim(0), x.dim(1)};
  for (size_t d = 0; d < n; ++d) {
    ASSIGN_OR_RETURN(int64_t o,
                     PoolOutputSize(x.dim(2 + d), a.kernel[d], a.strides[d],
                                    a.pads[d], a.pads[n + d],
                                    a.dilations[d], a.ceil_mode));
    dims.push_back(o);
  }
  ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape(dims)));
  Tensor* indices = nullptr;
  if (a.indices) {
    ASSIGN_OR_RETURN(indices, ctx->allocate_output(1, Shape(dims)));
  }
  if (y->NumElements() == 0) return absl::OkStatus();
  return VisitPoolType(x.dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    Run<T>(x, y, indices);
    return absl::OkStatus();
  });
}

}  // namespace

void RegisterPoolNdKernels(KernelRegistry* r) {
  std::vector<DataType> types = CpuArithTypes();
  types.push_back(DT_INT8);
  types.push_back(DT_UINT8);
  r->Register(
      CpuKernel("PoolND", {{"T", types}}, MakeKernel<PoolNdKernel>));
  r->Register(CpuKernel("MaxPoolWithIndices", {{"T", types}},
                        MakeKernel<PoolNdKernel>));
}

}  // namespace sluice::cpu
