// FusedAttention on the CPU, the reference the CUDA kernel is checked
// against: for each (batch, head, query) row, the scores
// s_j = scale * q·k_j + mask (-inf past the causal limit), a max-subtracted
// softmax and the weighted sum of v, all in the compute type (float for the
// 16-bit floats, double for float64). A row whose scores are all -inf gives
// zeros. float32 runs blocks of 64 rows with both products on the CPU's
// sgemm (AttendBlock); the other dtypes one task per row (AttendRow). Rows
// are found through strides (fused_attention_params.h), so the BSHD layouts
// read the projections' output in place and write the merged heads.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "Eigen/Core"
#include "core/status_macros.h"
#include "kernels/cpu/fused_attention.h"

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/sgemm.h"
#include "kernels/fused_attention_params.h"
#include "kernels/launch_kernel.h"

namespace sluice::cpu {
namespace {

// The element offset of row (b, h, i) of an operand.
int64_t Row(const AttentionOperand& o, int64_t b, int64_t h, int64_t i) {
  return o.offset + b * o.stride[0] + h * o.stride[1] + i * o.stride[2];
}

template <typename T>
void AttendRow(const FusedAttentionDims& d, const FusedAttentionAttrs& a,
               const T* q, const T* k, const T* v, const T* mask, T* out,
               int64_t row) {
  using C = typename ComputeType<T>::type;
  const int64_t i = row % d.sq;
  const int64_t h = (row / d.sq) % d.h;
  const int64_t b = row / (d.sq * d.h);
  const T* qr = q + Row(d.q, b, h, i);
  const T* kh = k + Row(d.k, b, h, 0);
  const T* vh = v + Row(d.v, b, h, 0);
  const T* mr = mask == nullptr ? nullptr
                                : mask + b * d.mask_stride[0] +
                                      h * d.mask_stride[1] + i * d.mask_stride[2];
  // Keys past `limit` are masked out (causal: aligned to the last key).
  const int64_t limit = a.causal ? i + d.sk - d.sq : d.sk - 1;
  std::vector<C> s(d.sk);
  std::vector<C> qc(d.d);
  for (int64_t x = 0; x < d.d; ++x) qc[x] = static_cast<C>(qr[x]);
  C mx = -std::numeric_limits<C>::infinity();
  for (int64_t j = 0; j < d.sk; ++j) {
    if (j > limit) {
      s[j] = -std::numeric_limits<C>::infinity();
      continue;
    }
    const T* kr = kh + j * d.k.stride[2];
    C dot = 0;
    for (int64_t x = 0; x < d.d; ++x) dot += qc[x] * static_cast<C>(kr[x]);
    C sc = static_cast<C>(a.scale) * dot;
    if (mr != nullptr) sc += static_cast<C>(mr[j * d.mask_stride[3]]);
    s[j] = sc;
    if (sc > mx) mx = sc;
  }
  T* o = out + Row(d.out, b, h, i);
  if (mx == -std::numeric_limits<C>::infinity()) {  // every key masked out
    for (int64_t x = 0; x < d.dv; ++x) o[x] = static_cast<T>(C(0));
    return;
  }
  C sum = 0;
  for (int64_t j = 0; j < d.sk; ++j) {
    s[j] = std::exp(s[j] - mx);
    sum += s[j];
  }
  std::vector<C> acc(d.dv, C(0));
  for (int64_t j = 0; j < d.sk; ++j) {
    if (s[j] == C(0)) continue;
    const T* vr = vh + j * d.v.stride[2];
    for (int64_t x = 0; x < d.dv; ++x) acc[x] += s[j] * static_cast<C>(vr[x]);
  }
  const C inv = C(1) / sum;
  for (int64_t x = 0; x < d.dv; ++x) o[x] = static_cast<T>(acc[x] * inv);
}

// float32: per (batch, head, block of up to 64 queries) the scores of the
// block as one GEMM (sgemm.h), the softmax row by row, then P V as a second
// GEMM scaled by each row's 1 / sum: the same arithmetic as AttendRow with
// the products on the CPU's sgemm, so it runs as fast as the unfused
// MatMuls.
constexpr int64_t kBlockRows = 64;
// Score rows are padded to a multiple of this many floats (a whole number
// of the widest packets).
constexpr int64_t kRowPad = 16;

void AttendBlock(const FusedAttentionDims& d, const FusedAttentionAttrs& a,
                 const float* q, const float* k, const float* v,
                 const float* mask, float* out, int64_t task) {
  const int64_t blocks = (d.sq + kBlockRows - 1) / kBlockRows;
  const int64_t i0 = (task % blocks) * kBlockRows;
  const int64_t h = (task / blocks) % d.h;
  const int64_t b = task / (blocks * d.h);
  const int64_t m = std::min(kBlockRows, d.sq - i0);
  const float* qb = q + Row(d.q, b, h, i0);
  const float* kh = k + Row(d.k, b, h, 0);
  const float* vh = v + Row(d.v, b, h, 0);
  float* ob = out + Row(d.out, b, h, i0);
  const int64_t ldo = d.out.stride[2];
  if (d.sk == 0) {
    for (int64_t r = 0; r < m; ++r) std::fill(ob + r * ldo, ob + r * ldo + d.dv, 0.f);
    return;
  }
  // Score rows padded to whole packets at aligned addresses: the softmax's
  // exponentials and sum then run in Eigen's packets over the whole padded
  // row, whatever its length or address, so a step's result does not
  // depend on where its buffer landed (a scalar head or tail would go
  // through std::exp, which rounds differently from Eigen's packet exp).
  const int64_t ld = (d.sk + kRowPad - 1) / kRowPad * kRowPad;
  std::vector<float, Eigen::aligned_allocator<float>> s(m * ld);
  if (d.d > 0) {
    Sgemm(false, true, m, d.sk, d.d, qb, d.q.stride[2], kh, d.k.stride[2],
          s.data(), ld);
  } else {
    std::fill(s.begin(), s.end(), 0.f);
  }
  std::vector<float> inv(m);
  constexpr float kInf = std::numeric_limits<float>::infinity();
  using PaddedRow = Eigen::Map<Eigen::ArrayXf, Eigen::AlignedMax>;
  for (int64_t r = 0; r < m; ++r) {
    const int64_t i = i0 + r;
    // Keys past `limit` are masked out (causal: aligned to the last key).
    const int64_t limit = a.causal ? i + d.sk - d.sq : d.sk - 1;
    const int64_t valid = std::clamp<int64_t>(limit + 1, 0, d.sk);
    float* sr = s.data() + r * ld;
    PaddedRow row(sr, ld);
    // Scaling and the mask are exact: any split into packets gives the same.
    row.head(valid) *= a.scale;
    if (mask != nullptr && valid > 0) {
      const float* mr = mask + b * d.mask_stride[0] + h * d.mask_stride[1] +
                        i * d.mask_stride[2];
      const int64_t ms = d.mask_stride[3];
      if (ms == 0) {
        row.head(valid) += mr[0];
      } else if (ms == 1) {
        row.head(valid) += Eigen::Map<const Eigen::ArrayXf>(mr, valid);
      } else {
        row.head(valid) +=
            Eigen::Map<const Eigen::ArrayXf, 0, Eigen::InnerStride<>>(
                mr, valid, Eigen::InnerStride<>(ms));
      }
    }
    std::fill(sr + valid, sr + ld, -kInf);
    const float mx = row.maxCoeff();
    if (mx == -kInf) {  // every key masked out: zeros
      std::fill(sr, sr + ld, 0.f);
      inv[r] = 0.f;
      continue;
    }
    // Eigen's exp leaves about 3e-39 (a denormal, slow in the product
    // after) for -inf, where std::exp gives 0: weights below the smallest
    // normal float are zero.
    row = (row - mx).exp();
    row = (row < std::numeric_limits<float>::min()).select(0.f, row);
    inv[r] = 1.f / row.sum();
  }
  Sgemm(false, false, m, d.dv, d.sk, s.data(), ld, vh, d.v.stride[2], ob, ldo);
  for (int64_t r = 0; r < m; ++r) {
    float* orow = ob + r * ldo;
    for (int64_t x = 0; x < d.dv; ++x) orow[x] *= inv[r];
  }
}

class FusedAttentionKernel final
    : public LaunchKernel<FusedAttentionAttrs, ParseFusedAttentionAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    ASSIGN_OR_RETURN(FusedAttentionDims d, PlanFusedAttention(attrs(), *ctx));
    const Tensor& q = ctx->input(0);
    const Tensor& k = ctx->input(1);
    const Tensor& v = ctx->input(2);
    const Tensor* mask = attrs().has_mask ? &ctx->input(3) : nullptr;
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, d.output_shape()));
    const int64_t rows = d.b * d.h * d.sq;
    if (rows == 0 || d.dv == 0) return absl::OkStatus();
    const Attrs a = attrs();
    if (a.t == DT_FLOAT) {
      const float* qp = q.data<float>();
      const float* kp = k.data<float>();
      const float* vp = v.data<float>();
      const float* mp = mask ? mask->data<float>() : nullptr;
      float* out = y->data<float>();
      const int64_t tasks = d.b * d.h * ((d.sq + kBlockRows - 1) / kBlockRows);
      const double cost = static_cast<double>(std::min(kBlockRows, d.sq)) *
                          static_cast<double>(d.sk) * (d.d + d.dv + 10);
      ParallelFor(*ctx, tasks, cost, [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
          AttendBlock(d, a, qp, kp, vp, mp, out, t);
        }
      });
      return absl::OkStatus();
    }
    return VisitFloat(a.t, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* qp = q.data<T>();
      const T* kp = k.data<T>();
      const T* vp = v.data<T>();
      const T* mp = mask ? mask->data<T>() : nullptr;
      T* out = y->data<T>();
      const double cost = 2.0 * static_cast<double>(d.sk) * (d.d + d.dv) + 20.0 * d.sk;
      ParallelFor(*ctx, rows, cost, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          AttendRow(d, a, qp, kp, vp, mp, out, r);
        }
      });
      return absl::OkStatus();
    });
  }
};

}  // namespace

void RegisterFusedAttentionKernels(KernelRegistry* r) {
  r->Register(CpuKernel("FusedAttention", {{"T", CpuFloatTypes()}},
                        MakeKernel<FusedAttentionKernel>));
}

}  // namespace sluice::cpu
