// FusedAttention (fused_attention.h): a flash-attention kernel for head dims
// up to 128 and a one-warp-per-row kernel for larger ones; float16 and
// bfloat16 go to the tensor-core kernel (fused_attention_tc.h) first.
//
// The tiled kernel: 128 threads per block, 64 query rows. Thread t holds
// rows rg, rg + 16, rg + 32, rg + 48 (rg = t / 8; consecutive rows in a warp
// keep shared-memory reads conflict-free) and, of a 64-key tile, the score
// columns cg + 8c (cg = t % 8), and of the output the DP / 8 contiguous
// columns from cg * DP / 8. The eight threads of a row are eight
// consecutive lanes, so row maxima and sums are three shuffles. Per key
// tile: K tile to shared memory, S = Q K^T (float4 reads, FMA), scale, mask,
// causal limit, online softmax update (running max m, sum l, the output
// rescaled by exp(m_old - m_new)), P to shared memory, V tile into K's
// place, O += P V. Everything in float32; inputs converted as they are
// loaded. Rows of q, k, v and the output are found through the launch's
// row strides, so token-major ([B, S, H*D]) and packed operands are read
// and written in place.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/device_utils.cuh"
#include "core/status_macros.h"
#include "kernels/cuda/fused_attention.h"
#include "kernels/cuda/fused_attention_tc.h"

namespace sluice::cuda {
namespace {

constexpr int kRows = 64;      // queries per block
constexpr int kKeys = 64;      // keys per tile
constexpr int kThreadsFa = 128;
constexpr int kLdp = kKeys + 4;  // row stride of the P tile (floats)

template <typename T>
__device__ __forceinline__ float Load(const T* p) {
  return static_cast<float>(ToWide(*p));
}

// Four consecutive elements from a 16-byte (float) or 8-byte (16-bit)
// aligned address.
template <typename T>
__device__ __forceinline__ float4 Load4(const T* p) {
  if constexpr (std::is_same_v<T, float>) {
    return *reinterpret_cast<const float4*>(p);
  } else {
    const uint2 raw = *reinterpret_cast<const uint2*>(p);
    const T* e = reinterpret_cast<const T*>(&raw);
    return make_float4(Load(e), Load(e + 1), Load(e + 2), Load(e + 3));
  }
}

// Copies rows [row0, row0 + 64) of a [rows, cols] matrix whose rows are
// `src_ld` elements apart into a [64][ld] float tile, zero past `rows` and
// `cols` (up to DP). `vec`: cols and src_ld are multiples of 4 and src
// aligned for Load4, so four elements move at once.
template <typename T, int DP>
__device__ __forceinline__ void LoadTile(const T* src, int64_t src_ld,
                                         int64_t row0, int64_t rows,
                                         int64_t cols, float* tile, int ld,
                                         bool vec) {
  if (vec) {
    for (int e = threadIdx.x * 4; e < kRows * DP; e += kThreadsFa * 4) {
      const int r = e / DP;
      const int c = e % DP;
      float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
      if (row0 + r < rows && c < cols) x = Load4(src + (row0 + r) * src_ld + c);
      *reinterpret_cast<float4*>(tile + r * ld + c) = x;
    }
    return;
  }
  for (int e = threadIdx.x; e < kRows * DP; e += kThreadsFa) {
    const int r = e / DP;
    const int c = e % DP;
    float x = 0.f;
    if (row0 + r < rows && c < cols) x = Load(src + (row0 + r) * src_ld + c);
    tile[r * ld + c] = x;
  }
}

template <typename T, int DP>
static __global__ void __launch_bounds__(kThreadsFa)
    FlashAttentionKernel(FusedAttentionLaunch p, bool vec) {
  constexpr int kLd = DP + 4;
  constexpr int kCols = DP / 8;  // output columns per thread
  extern __shared__ float4 smem4[];
  float* qs = reinterpret_cast<float*>(smem4);  // [kRows][kLd]
  float* kv = qs + kRows * kLd;                 // [kKeys][kLd]: K, then V
  float* ps = kv + kKeys * kLd;                 // [kRows][kLdp]

  const int64_t q_tiles = (p.sq + kRows - 1) / kRows;
  const int64_t tile = blockIdx.x % q_tiles;
  const int64_t bh = blockIdx.x / q_tiles;
  const int64_t b = bh / p.h;
  const int64_t h = bh % p.h;
  const int64_t q0 = tile * kRows;
  const T* q = static_cast<const T*>(p.q) + b * p.q_stride[0] + h * p.q_stride[1];
  const T* k = static_cast<const T*>(p.k) + b * p.k_stride[0] + h * p.k_stride[1];
  const T* v = static_cast<const T*>(p.v) + b * p.v_stride[0] + h * p.v_stride[1];
  const T* mask = static_cast<const T*>(p.mask);
  if (mask != nullptr) mask += b * p.mask_stride[0] + h * p.mask_stride[1];
  T* out = static_cast<T*>(p.out) + b * p.out_stride[0] + h * p.out_stride[1];

  const int tid = threadIdx.x;
  const int rg = tid / 8;
  const int cg = tid % 8;
  LoadTile<T, DP>(q + q0 * p.q_stride[2], p.q_stride[2], 0, p.sq - q0, p.d, qs,
                  kLd, vec);

  float m[4], l[4], acc[4][kCols];
#pragma unroll
  for (int ri = 0; ri < 4; ++ri) {
    m[ri] = -INFINITY;
    l[ri] = 0.f;
#pragma unroll
    for (int c = 0; c < kCols; ++c) acc[ri][c] = 0.f;
  }
  // Keys past the last row's causal limit are masked for every row here.
  int64_t kv_end = p.sk;
  if (p.causal) {
    const int64_t last = q0 + kRows - 1 + p.sk - p.sq + 1;
    kv_end = last < kv_end ? last : kv_end;
  }
  for (int64_t k0 = 0; k0 < kv_end; k0 += kKeys) {
    __syncthreads();  // the previous tile's P and V are read
    LoadTile<T, DP>(k, p.k_stride[2], k0, p.sk, p.d, kv, kLd, vec);
    __syncthreads();
    float s[4][8];
#pragma unroll
    for (int ri = 0; ri < 4; ++ri) {
#pragma unroll
      for (int c = 0; c < 8; ++c) s[ri][c] = 0.f;
    }
#pragma unroll 2
    for (int x = 0; x < DP; x += 4) {
      float4 qv[4], kk[8];
#pragma unroll
      for (int ri = 0; ri < 4; ++ri) {
        qv[ri] = *reinterpret_cast<const float4*>(qs + (rg + 16 * ri) * kLd + x);
      }
#pragma unroll
      for (int c = 0; c < 8; ++c) {
        kk[c] = *reinterpret_cast<const float4*>(kv + (cg + 8 * c) * kLd + x);
      }
#pragma unroll
      for (int ri = 0; ri < 4; ++ri) {
#pragma unroll
        for (int c = 0; c < 8; ++c) {
          float t = s[ri][c];
          t = fmaf(qv[ri].x, kk[c].x, t);
          t = fmaf(qv[ri].y, kk[c].y, t);
          t = fmaf(qv[ri].z, kk[c].z, t);
          t = fmaf(qv[ri].w, kk[c].w, t);
          s[ri][c] = t;
        }
      }
    }
    // Scale, mask, limits; then the online softmax update per row.
#pragma unroll
    for (int ri = 0; ri < 4; ++ri) {
      const int64_t i = q0 + rg + 16 * ri;
      float tmax = -INFINITY;
#pragma unroll
      for (int c = 0; c < 8; ++c) {
        const int64_t j = k0 + cg + 8 * c;
        float x = s[ri][c] * p.scale;
        if (j >= p.sk || (p.causal && j > i + p.sk - p.sq)) {
          x = -INFINITY;
        } else if (mask != nullptr && i < p.sq) {
          x += Load(mask + i * p.mask_stride[2] + j * p.mask_stride[3]);
        }
        s[ri][c] = x;
        tmax = fmaxf(tmax, x);
      }
      tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 1));
      tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 2));
      tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 4));
      const float m_new = fmaxf(m[ri], tmax);
      const float m_use = m_new == -INFINITY ? 0.f : m_new;
      const float alpha = expf(m[ri] - m_use);
      float rs = 0.f;
#pragma unroll
      for (int c = 0; c < 8; ++c) {
        const float e = expf(s[ri][c] - m_use);
        rs += e;
        ps[(rg + 16 * ri) * kLdp + cg + 8 * c] = e;
      }
      rs += __shfl_xor_sync(0xffffffffu, rs, 1);
      rs += __shfl_xor_sync(0xffffffffu, rs, 2);
      rs += __shfl_xor_sync(0xffffffffu, rs, 4);
      l[ri] = l[ri] * alpha + rs;
      m[ri] = m_new;
#pragma unroll
      for (int c = 0; c < kCols; ++c) acc[ri][c] *= alpha;
    }
    __syncthreads();  // K read, P written
    LoadTile<T, DP>(v, p.v_stride[2], k0, p.sk, p.dv, kv, kLd, vec);
    __syncthreads();
#pragma unroll 2
    for (int j = 0; j < kKeys; j += 4) {
      float4 pv[4];
#pragma unroll
      for (int ri = 0; ri < 4; ++ri) {
        pv[ri] = *reinterpret_cast<const float4*>(ps + (rg + 16 * ri) * kLdp + j);
      }
#pragma unroll
      for (int jj = 0; jj < 4; ++jj) {
        const float* vr = kv + (j + jj) * kLd + cg * kCols;
        float vv[kCols];
#pragma unroll
        for (int c = 0; c < kCols; c += 4) {
          const float4 t = *reinterpret_cast<const float4*>(vr + c);
          vv[c] = t.x;
          vv[c + 1] = t.y;
          vv[c + 2] = t.z;
          vv[c + 3] = t.w;
        }
#pragma unroll
        for (int ri = 0; ri < 4; ++ri) {
          const float pj = jj == 0 ? pv[ri].x
                           : jj == 1 ? pv[ri].y
                           : jj == 2 ? pv[ri].z
                                     : pv[ri].w;
#pragma unroll
          for (int c = 0; c < kCols; ++c) acc[ri][c] = fmaf(pj, vv[c], acc[ri][c]);
        }
      }
    }
  }
#pragma unroll
  for (int ri = 0; ri < 4; ++ri) {
    const int64_t i = q0 + rg + 16 * ri;
    if (i >= p.sq) continue;
    const float inv = l[ri] > 0.f ? 1.f / l[ri] : 0.f;
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      const int64_t col = cg * kCols + c;
      if (col < p.dv) out[i * p.out_stride[2] + col] = FromWide<T>(acc[ri][c] * inv);
    }
  }
}

// Head dims past 128: one warp per query row, keys one at a time, the
// output row accumulated in shared memory ([4 warps][dv] floats).
constexpr int kWarps = 4;

template <typename T>
static __global__ void __launch_bounds__(32 * kWarps)
    RowAttentionKernel(FusedAttentionLaunch p) {
  extern __shared__ float4 smem4[];
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  float* acc = reinterpret_cast<float*>(smem4) + warp * p.dv;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarps + warp;
  if (row >= p.b * p.h * p.sq) return;
  const int64_t i = row % p.sq;
  const int64_t h = (row / p.sq) % p.h;
  const int64_t b = row / (p.sq * p.h);
  const T* q = static_cast<const T*>(p.q) + b * p.q_stride[0] + h * p.q_stride[1] +
               i * p.q_stride[2];
  const T* k = static_cast<const T*>(p.k) + b * p.k_stride[0] + h * p.k_stride[1];
  const T* v = static_cast<const T*>(p.v) + b * p.v_stride[0] + h * p.v_stride[1];
  const T* mask = static_cast<const T*>(p.mask);
  if (mask != nullptr) {
    mask += b * p.mask_stride[0] + h * p.mask_stride[1] + i * p.mask_stride[2];
  }
  for (int64_t c = lane; c < p.dv; c += 32) acc[c] = 0.f;
  float m = -INFINITY, l = 0.f;
  const int64_t end = p.causal ? (i + p.sk - p.sq + 1 < p.sk ? i + p.sk - p.sq + 1 : p.sk) : p.sk;
  for (int64_t j = 0; j < end; ++j) {
    float dot = 0.f;
    for (int64_t c = lane; c < p.d; c += 32) {
      dot = fmaf(Load(q + c), Load(k + j * p.k_stride[2] + c), dot);
    }
    for (int o = 16; o > 0; o /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, o);
    float s = dot * p.scale;
    if (mask != nullptr) s += Load(mask + j * p.mask_stride[3]);
    if (s == -INFINITY) continue;
    const float m_new = fmaxf(m, s);
    const float alpha = expf(m - m_new);
    const float e = expf(s - m_new);
    l = l * alpha + e;
    m = m_new;
    __syncwarp();
    for (int64_t c = lane; c < p.dv; c += 32) {
      acc[c] = fmaf(e, Load(v + j * p.v_stride[2] + c), acc[c] * alpha);
    }
  }
  __syncwarp();
  T* out = static_cast<T*>(p.out) + b * p.out_stride[0] + h * p.out_stride[1] +
           i * p.out_stride[2];
  const float inv = l > 0.f ? 1.f / l : 0.f;
  for (int64_t c = lane; c < p.dv; c += 32) out[c] = FromWide<T>(acc[c] * inv);
}

template <typename T, int DP>
absl::Status LaunchFlash(const FusedAttentionLaunch& l, cudaStream_t stream) {
  constexpr int kLd = DP + 4;
  const size_t smem = sizeof(float) * (2 * kRows * kLd + kRows * kLdp);
  auto kernel = FlashAttentionKernel<T, DP>;
  cudaError_t err = cudaFuncSetAttribute(
      kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  if (err != cudaSuccess) {
    return absl::InternalError(absl::StrCat(
        "FusedAttention: cannot allow ", smem, " bytes of shared memory: ",
        cudaGetErrorString(err)));
  }
  const int64_t blocks = l.b * l.h * ((l.sq + kRows - 1) / kRows);
  if (blocks > 0x7fffffff) {
    return absl::InvalidArgumentError(absl::StrCat(
        "FusedAttention: ", blocks, " thread blocks is more than CUDA allows"));
  }
  // Four elements at a time where every row starts 16-byte aligned: the
  // pointers are, and every stride is a multiple of 4 elements.
  auto aligned = [](const void* ptr) {
    return reinterpret_cast<uintptr_t>(ptr) % 16 == 0;
  };
  auto by4 = [](const int64_t s[3]) {
    return s[0] % 4 == 0 && s[1] % 4 == 0 && s[2] % 4 == 0;
  };
  const bool vec = l.d % 4 == 0 && l.dv % 4 == 0 && aligned(l.q) &&
                   aligned(l.k) && aligned(l.v) && by4(l.q_stride) &&
                   by4(l.k_stride) && by4(l.v_stride);
  kernel<<<static_cast<unsigned int>(blocks), kThreadsFa, smem, stream>>>(l, vec);
  return LaunchStatus("FusedAttention");
}

template <typename T>
absl::Status LaunchTyped(const FusedAttentionLaunch& l, cudaStream_t stream) {
  if constexpr (!std::is_same_v<T, float>) {
    // 16-bit inputs: tensor cores where the GPU and head dims allow.
    ASSIGN_OR_RETURN(bool launched, LaunchFusedAttentionTensorCores(l, stream));
    if (launched) return absl::OkStatus();
  }
  const int64_t dp = l.d > l.dv ? l.d : l.dv;
  if (dp <= 32) return LaunchFlash<T, 32>(l, stream);
  if (dp <= 64) return LaunchFlash<T, 64>(l, stream);
  if (dp <= 96) return LaunchFlash<T, 96>(l, stream);
  if (dp <= 128) return LaunchFlash<T, 128>(l, stream);
  const size_t smem = sizeof(float) * kWarps * l.dv;
  if (smem > 48 * 1024) {
    return absl::UnimplementedError(absl::StrCat(
        "FusedAttention on CUDA handles value head dims up to 3072, got ", l.dv));
  }
  const int64_t rows = l.b * l.h * l.sq;
  const int64_t blocks = (rows + kWarps - 1) / kWarps;
  if (blocks > 0x7fffffff) {
    return absl::InvalidArgumentError(absl::StrCat(
        "FusedAttention: ", blocks, " thread blocks is more than CUDA allows"));
  }
  RowAttentionKernel<T><<<static_cast<unsigned int>(blocks), 32 * kWarps, smem,
                          stream>>>(l);
  return LaunchStatus("FusedAttention");
}

}  // namespace

bool HasFusedAttentionKernel(GpuDtype dtype) {
  return dtype == GpuDtype::kFloat || dtype == GpuDtype::kHalf ||
         dtype == GpuDtype::kBFloat16;
}

absl::Status LaunchFusedAttention(const FusedAttentionLaunch& l,
                                  cudaStream_t stream) {
  if (l.b * l.h * l.sq == 0 || l.dv == 0) return absl::OkStatus();
  switch (l.dtype) {
    case GpuDtype::kFloat: return LaunchTyped<float>(l, stream);
    case GpuDtype::kHalf: return LaunchTyped<__half>(l, stream);
    case GpuDtype::kBFloat16: return LaunchTyped<__nv_bfloat16>(l, stream);
    default:
      return absl::UnimplementedError(absl::StrCat(
          "no CUDA FusedAttention kernel for dtype ", static_cast<int>(l.dtype)));
  }
}

}  // namespace sluice::cuda
