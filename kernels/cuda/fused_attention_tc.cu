// FusedAttention on tensor cores (fused_attention_tc.h).
//
// A block: 128 threads (4 warps), 64 query rows, head dims padded to DP (32,
// 64, 96 or 128). Shared memory, all 32-byte aligned as WMMA wants:
//   qs, ks, vs  [64][DP + 8] of T: the Q tile (loaded once), a K and a V
//               tile of 64 keys (zero past the ends);
//   ss          per warp [16][68] float: its scores for the tile;
//   ps          per warp [16][72] of T: its probabilities for the tile;
//   os          per warp [16][DP + 4] float: its output accumulators.
// Per key tile each warp: S = Q_w K^T (4 x DP/16 WMMA products), then two
// lanes per row scale, mask and update the running max m and sum l, write
// P, and rescale the row of os by exp(m_old - m_new); then os += P V.
// Rows of q, k, v and the output are found through the launch's row
// strides (BSHD and packed operands, design decision 29).
#include "kernels/cuda/fused_attention_tc.h"

#include <mma.h>

#include <cmath>
#include <cstdint>

#include "core/status_macros.h"
#include "kernels/cuda/device_utils.cuh"

namespace sluice::cuda {
namespace {

constexpr int kTcRows = 64;  // queries per block
constexpr int kTcKeys = 64;  // keys per tile
constexpr int kTcWarps = 4;
constexpr int kTcThreads = 32 * kTcWarps;
constexpr int kLds = kTcKeys + 4;  // ss row stride (floats)
constexpr int kLdp = kTcKeys + 8;  // ps row stride (elements)

template <int DP>
struct TcLayout {
  static constexpr int kLdt = DP + 8;  // qs/ks/vs row stride (elements)
  static constexpr int kLdo = DP + 4;  // os row stride (floats)
  template <typename T>
  static constexpr size_t Bytes() {
    return 3 * kTcRows * kLdt * sizeof(T) + kTcWarps * 16 * kLds * sizeof(float) +
           kTcWarps * 16 * kLdp * sizeof(T) + kTcWarps * 16 * kLdo * sizeof(float);
  }
};

// Rows [row0, row0 + 64) of a [rows, cols] matrix (row stride `ld`) into a
// [64][ldt] tile of T, zero past `rows` and `cols` (up to DP). `vec`: cols
// and ld are multiples of 8 and src is 16-byte aligned.
template <typename T, int DP>
__device__ __forceinline__ void LoadTcTile(const T* src, int64_t row0, int64_t rows,
                                           int64_t cols, int64_t ld, T* tile, bool vec) {
  constexpr int kLdt = TcLayout<DP>::kLdt;
  if (vec) {
    for (int e = threadIdx.x * 8; e < kTcRows * DP; e += kTcThreads * 8) {
      const int r = e / DP, c = e % DP;
      uint4 x = make_uint4(0, 0, 0, 0);
      if (row0 + r < rows && c < cols) {
        x = *reinterpret_cast<const uint4*>(src + (row0 + r) * ld + c);
      }
      *reinterpret_cast<uint4*>(tile + r * kLdt + c) = x;
    }
    return;
  }
  const T zero = FromWide<T>(0.0f);
  for (int e = threadIdx.x; e < kTcRows * DP; e += kTcThreads) {
    const int r = e / DP, c = e % DP;
    tile[r * kLdt + c] = (row0 + r < rows && c < cols) ? src[(row0 + r) * ld + c] : zero;
  }
}

template <typename T, int DP>
static __global__ void __launch_bounds__(kTcThreads)
    TensorCoreAttentionKernel(FusedAttentionLaunch p, bool vec) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using namespace nvcuda;
  constexpr int kLdt = TcLayout<DP>::kLdt;
  constexpr int kLdo = TcLayout<DP>::kLdo;
  extern __shared__ float4 smem4[];
  T* qs = reinterpret_cast<T*>(smem4);
  T* ks = qs + kTcRows * kLdt;
  T* vs = ks + kTcRows * kLdt;
  float* ss_all = reinterpret_cast<float*>(vs + kTcRows * kLdt);
  T* ps_all = reinterpret_cast<T*>(ss_all + kTcWarps * 16 * kLds);
  float* os_all = reinterpret_cast<float*>(ps_all + kTcWarps * 16 * kLdp);

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float* ss = ss_all + warp * 16 * kLds;
  T* ps = ps_all + warp * 16 * kLdp;
  float* os = os_all + warp * 16 * kLdo;

  const int64_t q_tiles = (p.sq + kTcRows - 1) / kTcRows;
  const int64_t tile = blockIdx.x % q_tiles;
  const int64_t bh = blockIdx.x / q_tiles;
  const int64_t b = bh / p.h, h = bh % p.h;
  const int64_t q0 = tile * kTcRows;
  const T* q = static_cast<const T*>(p.q) + b * p.q_stride[0] + h * p.q_stride[1];
  const T* k = static_cast<const T*>(p.k) + b * p.k_stride[0] + h * p.k_stride[1];
  const T* v = static_cast<const T*>(p.v) + b * p.v_stride[0] + h * p.v_stride[1];
  const T* mask = static_cast<const T*>(p.mask);
  if (mask != nullptr) mask += b * p.mask_stride[0] + h * p.mask_stride[1];
  T* out = static_cast<T*>(p.out) + b * p.out_stride[0] + h * p.out_stride[1];

  LoadTcTile<T, DP>(q, q0, p.sq, p.d, p.q_stride[2], qs, vec);
  // Two lanes per row: row r = lane / 2, columns from half * (width / 2).
  const int r = lane / 2, half = lane % 2;
  const int64_t i = q0 + warp * 16 + r;  // this lane's query
  for (int c = half * (DP / 2); c < (half + 1) * (DP / 2); ++c) os[r * kLdo + c] = 0.f;
  float m = -INFINITY, l = 0.f;

  int64_t kv_end = p.sk;
  if (p.causal) {
    const int64_t last = q0 + kTcRows - 1 + p.sk - p.sq + 1;
    kv_end = last < kv_end ? last : kv_end;
  }
  const T* qw = qs + warp * 16 * kLdt;
  for (int64_t k0 = 0; k0 < kv_end; k0 += kTcKeys) {
    __syncthreads();  // every warp is done with the last K and V tiles
    LoadTcTile<T, DP>(k, k0, p.sk, p.d, p.k_stride[2], ks, vec);
    LoadTcTile<T, DP>(v, k0, p.sk, p.dv, p.v_stride[2], vs, vec);
    __syncthreads();
    // S = Q_w K^T: ks row n is key n, i.e. K^T column-major.
#pragma unroll
    for (int nb = 0; nb < kTcKeys / 16; ++nb) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::fill_fragment(acc, 0.0f);
#pragma unroll
      for (int kk = 0; kk < DP / 16; ++kk) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> bm;
        wmma::load_matrix_sync(a, qw + kk * 16, kLdt);
        wmma::load_matrix_sync(bm, ks + nb * 16 * kLdt + kk * 16, kLdt);
        wmma::mma_sync(acc, a, bm, acc);
      }
      wmma::store_matrix_sync(ss + nb * 16, acc, kLds, wmma::mem_row_major);
    }
    __syncwarp();
    // Scale, mask, causal limit; the online softmax update of row r, in
    // base 2 (scores times log2(e); exp2f is one MUFU instruction). Each
    // lane walks its columns from its own start, rot = (r / 8) + 2 * half,
    // so that at every step the 32 lanes read 32 different banks of ss and
    // os (row strides of 4 mod 32 words).
    constexpr float kLog2e = 1.4426950408889634f;
    const float scale2 = p.scale * kLog2e;
    const int rot = (r >> 3) + 2 * half;
    float s[kTcKeys / 2];
    float tmax = -INFINITY;
#pragma unroll
    for (int c = 0; c < kTcKeys / 2; ++c) {
      const int col = half * (kTcKeys / 2) + ((c + rot) & (kTcKeys / 2 - 1));
      const int64_t j = k0 + col;
      float x = ss[r * kLds + col] * scale2;
      if (j >= p.sk || (p.causal && j > i + p.sk - p.sq)) {
        x = -INFINITY;
      } else if (mask != nullptr && i < p.sq) {
        x += ToWide(mask[i * p.mask_stride[2] + j * p.mask_stride[3]]) * kLog2e;
      }
      s[c] = x;
      tmax = fmaxf(tmax, x);
    }
    tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, 1));
    const float m_new = fmaxf(m, tmax);
    const float m_use = m_new == -INFINITY ? 0.f : m_new;
    const float alpha = exp2f(m - m_use);
    float rs = 0.f;
#pragma unroll
    for (int c = 0; c < kTcKeys / 2; ++c) {
      const float e = exp2f(s[c] - m_use);
      rs += e;
      ps[r * kLdp + half * (kTcKeys / 2) + ((c + rot) & (kTcKeys / 2 - 1))] = FromWide<T>(e);
    }
    rs += __shfl_xor_sync(0xffffffffu, rs, 1);
    l = l * alpha + rs;
    m = m_new;
#pragma unroll
    for (int c = 0; c < DP / 2; ++c) {
      int cc = c + rot;
      if (cc >= DP / 2) cc -= DP / 2;
      os[r * kLdo + half * (DP / 2) + cc] *= alpha;
    }
    __syncwarp();
    // os += P V: vs row k is key k, i.e. V row-major.
#pragma unroll
    for (int nb = 0; nb < DP / 16; ++nb) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::load_matrix_sync(acc, os + nb * 16, kLdo, wmma::mem_row_major);
#pragma unroll
      for (int kk = 0; kk < kTcKeys / 16; ++kk) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> bm;
        wmma::load_matrix_sync(a, ps + kk * 16, kLdp);
        wmma::load_matrix_sync(bm, vs + kk * 16 * kLdt + nb * 16, kLdt);
        wmma::mma_sync(acc, a, bm, acc);
      }
      wmma::store_matrix_sync(os + nb * 16, acc, kLdo, wmma::mem_row_major);
    }
    __syncwarp();
  }
  if (i >= p.sq) return;
  const float inv = l > 0.f ? 1.f / l : 0.f;
  for (int64_t c = half * (DP / 2); c < (half + 1) * (DP / 2) && c < p.dv; ++c) {
    out[i * p.out_stride[2] + c] = FromWide<T>(os[r * kLdo + c] * inv);
  }
#endif
}

// Compute capability major of the current device (cached per device).
int CurrentMajor() {
  constexpr int kMaxDevices = 64;
  static int majors[kMaxDevices] = {};  // 0: not read yet
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kMaxDevices) return 0;
  if (majors[dev] == 0) {
    int major = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) !=
        cudaSuccess) {
      return 0;
    }
    majors[dev] = major;  // the same value from any thread
  }
  return majors[dev];
}

template <typename T, int DP>
absl::StatusOr<bool> LaunchTc(const FusedAttentionLaunch& l, cudaStream_t stream) {
  const size_t smem = TcLayout<DP>::template Bytes<T>();
  auto kernel = TensorCoreAttentionKernel<T, DP>;
  cudaError_t err = cudaFuncSetAttribute(
      kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  if (err != cudaSuccess) {
    cudaGetLastError();  // not sticky: the CUDA-core kernel instead
    return false;
  }
  const int64_t blocks = l.b * l.h * ((l.sq + kTcRows - 1) / kTcRows);
  if (blocks > 0x7fffffff) return false;
  auto aligned = [](const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; };
  // Eight elements at a time where every row of q, k and v starts 16-byte
  // aligned: the pointers are, and every (batch, head, row) stride is a
  // multiple of 8 elements (BSHD operands at odd column offsets are not).
  auto by8 = [](const int64_t s[3]) {
    return s[0] % 8 == 0 && s[1] % 8 == 0 && s[2] % 8 == 0;
  };
  const bool vec = l.d % 8 == 0 && l.dv % 8 == 0 && aligned(l.q) && aligned(l.k) &&
                   aligned(l.v) && by8(l.q_stride) && by8(l.k_stride) &&
                   by8(l.v_stride);
  kernel<<<static_cast<unsigned int>(blocks), kTcThreads, smem, stream>>>(l, vec);
  RETURN_IF_ERROR(LaunchStatus("FusedAttention (tensor cores)"));
  return true;
}

template <typename T>
absl::StatusOr<bool> LaunchTcTyped(const FusedAttentionLaunch& l, cudaStream_t stream) {
  const int64_t dp = l.d > l.dv ? l.d : l.dv;
  if (dp <= 32) return LaunchTc<T, 32>(l, stream);
  if (dp <= 64) return LaunchTc<T, 64>(l, stream);
  if (dp <= 96) return LaunchTc<T, 96>(l, stream);
  return LaunchTc<T, 128>(l, stream);
}

}  // namespace

absl::StatusOr<bool> LaunchFusedAttentionTensorCores(const FusedAttentionLaunch& l,
                                                     cudaStream_t stream) {
  if (l.dtype != GpuDtype::kHalf && l.dtype != GpuDtype::kBFloat16) return false;
  if (l.d > 128 || l.dv > 128 || CurrentMajor() < 8) return false;
  if (l.dtype == GpuDtype::kHalf) return LaunchTcTyped<__half>(l, stream);
  return LaunchTcTyped<__nv_bfloat16>(l, stream);
}

}  // namespace sluice::cuda
