#include "kernels/cuda/linear_attention.h"

#include "kernels/cuda/device_utils.cuh"

namespace sluice::cuda {
namespace {

template <typename T>
__device__ __forceinline__ float F(T v) {
  return static_cast<float>(ToWide(v));
}

// One block per (batch entry, kv head); see linear_attention.h.
template <typename T>
__global__ void LinearAttentionKernel(LinearAttentionLaunch l) {
  const int64_t blk = blockIdx.x;
  const int64_t b = blk / l.hkv;
  const int64_t h = blk % l.hkv;
  const int64_t sdim = l.dk * l.dv;
  float* s = l.scratch + blk * (sdim + l.dv);
  float* vt = s + sdim;
  const T* q = static_cast<const T*>(l.q);
  const T* k = static_cast<const T*>(l.k);
  const T* v = static_cast<const T*>(l.v);
  const T* decay = static_cast<const T*>(l.decay);
  const T* beta = static_cast<const T*>(l.beta);
  T* out = static_cast<T*>(l.out);
  const int64_t group = l.hq / l.hkv;
  const int64_t state_at = (b * l.hkv + h) * sdim;
  const int64_t tid = threadIdx.x;
  const int64_t nt = blockDim.x;
  for (int64_t i = tid; i < sdim; i += nt) {
    s[i] = F(static_cast<const T*>(l.past)[state_at + i]);
  }
  __syncthreads();
  for (int64_t t = 0; t < l.t; ++t) {
    const int64_t row = b * l.t + t;
    const T* kt = k + (row * l.hkv + h) * l.dk;
    const T* vrow = v + (row * l.hkv + h) * l.dv;
    if (l.gated) {
      const T* g = decay + (row * l.hkv + h) * l.decay_width;
      for (int64_t e = tid; e < sdim; e += nt) {
        const int64_t i = e / l.dv;
        s[e] *= expf(F(g[l.decay_width == 1 ? 0 : i]));
      }
      __syncthreads();
    }
    if (l.delta) {
      const float bt =
          F(beta[row * l.beta_width + (l.beta_width == 1 ? 0 : h)]);
      for (int64_t m = tid; m < l.dv; m += nt) {
        float r = 0;
        for (int64_t i = 0; i < l.dk; ++i) r += s[i * l.dv + m] * F(kt[i]);
        vt[m] = bt * (F(vrow[m]) - r);
      }
    } else {
      for (int64_t m = tid; m < l.dv; m += nt) vt[m] = F(vrow[m]);
    }
    __syncthreads();  // vt complete; s no longer read for the delta
    for (int64_t e = tid; e < sdim; e += nt) {
      s[e] += F(kt[e / l.dv]) * vt[e % l.dv];
    }
    __syncthreads();  // the state after step t
    for (int64_t e = tid; e < group * l.dv; e += nt) {
      const int64_t hq = h * group + e / l.dv;
      const int64_t m = e % l.dv;
      const T* qt = q + (row * l.hq + hq) * l.dk;
      float acc = 0;
      for (int64_t i = 0; i < l.dk; ++i) acc += F(qt[i]) * s[i * l.dv + m];
      out[(row * l.hq + hq) * l.dv + m] = FromWide<T>(l.scale * acc);
    }
    __syncthreads();  // outputs read s before the next step changes it
  }
  for (int64_t i = tid; i < sdim; i += nt) {
    static_cast<T*>(l.state)[state_at + i] = FromWide<T>(s[i]);
  }
}

}  // namespace

int64_t LinearAttentionScratchFloats(const LinearAttentionLaunch& l) {
  return l.b * l.hkv * (l.dk * l.dv + l.dv);  // as the kernel carves it
}

absl::Status LaunchLinearAttention(const LinearAttentionLaunch& l,
                                   cudaStream_t stream) {
  const int64_t blocks = l.b * l.hkv;
  if (blocks == 0) return absl::OkStatus();
  if (blocks > 0x7fffffff) {
    return absl::UnimplementedError("LinearAttention: too many heads");
  }
  const unsigned int grid = static_cast<unsigned int>(blocks);
  switch (l.dtype) {
    case GpuDtype::kFloat:
      LinearAttentionKernel<float><<<grid, kThreads, 0, stream>>>(l);
      break;
    case GpuDtype::kDouble:
      LinearAttentionKernel<double><<<grid, kThreads, 0, stream>>>(l);
      break;
    case GpuDtype::kHalf:
      LinearAttentionKernel<__half><<<grid, kThreads, 0, stream>>>(l);
      break;
    case GpuDtype::kBFloat16:
      LinearAttentionKernel<__nv_bfloat16><<<grid, kThreads, 0, stream>>>(l);
      break;
    default:
      return absl::InvalidArgumentError("LinearAttention: not a float dtype");
  }
  return LaunchStatus("LinearAttention");
}

}  // namespace sluice::cuda
