// Strided copies and Gather, by element size.
#include "kernels/cuda/copy.h"
#include "kernels/cuda/device_utils.cuh"

namespace sluice::cuda {
namespace {

template <int kBytes>
static __global__ void StridedCopyKernel(const void* src, int64_t src_offset,
                                         void* dst, int64_t dst_offset,
                                         IndexMap map) {
  using U = typename Bits<kBytes>::type;
  const U* s = static_cast<const U*>(src) + src_offset;
  U* d = static_cast<U*>(dst) + dst_offset;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
       i < map.num_elements; i += int64_t{gridDim.x} * blockDim.x) {
    int64_t rest = i;
    int64_t so = 0;
    int64_t dof = 0;
    for (int k = map.rank - 1; k >= 0; --k) {
      const int64_t idx = rest % map.dims[k];
      rest /= map.dims[k];
      so += idx * map.strides[0][k];
      dof += idx * map.strides[1][k];
    }
    d[dof] = s[so];
  }
}

template <int kBytes, typename I>
static __global__ void GatherKernel(const void* params, const I* indices,
                                    void* out, int64_t outer, int64_t axis_dim,
                                    int64_t inner, int64_t num_indices,
                                    unsigned long long* bad_position) {
  using U = typename Bits<kBytes>::type;
  const U* p = static_cast<const U*>(params);
  U* o = static_cast<U*>(out);
  const int64_t total = outer * num_indices * inner;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t in_pos = i % inner;
    const int64_t k = (i / inner) % num_indices;
    const int64_t out_pos = i / (inner * num_indices);
    int64_t index = static_cast<int64_t>(indices[k]);
    if (index < 0) index += axis_dim;
    if (index < 0 || index >= axis_dim) {
      atomicCAS(bad_position, 0ull, static_cast<unsigned long long>(k) + 1);
      o[i] = U(0);
      continue;
    }
    o[i] = p[(out_pos * axis_dim + index) * inner + in_pos];
  }
}

template <int kBytes>
void LaunchGatherBytes(const void* params, const void* indices,
                       bool indices_int64, void* out, int64_t outer,
                       int64_t axis_dim, int64_t inner, int64_t num_indices,
                       unsigned long long* bad, cudaStream_t stream) {
  const int64_t n = outer * num_indices * inner;
  if (indices_int64) {
    GatherKernel<kBytes, int64_t><<<GridFor(n), kThreads, 0, stream>>>(
        params, static_cast<const int64_t*>(indices), out, outer, axis_dim,
        inner, num_indices, bad);
  } else {
    GatherKernel<kBytes, int32_t><<<GridFor(n), kThreads, 0, stream>>>(
        params, static_cast<const int32_t*>(indices), out, outer, axis_dim,
        inner, num_indices, bad);
  }
}

}  // namespace

absl::Status LaunchStridedCopy(int element_bytes, const void* src,
                               int64_t src_offset, void* dst,
                               int64_t dst_offset, const IndexMap& map,
                               cudaStream_t stream) {
  if (map.num_elements == 0) return absl::OkStatus();
  // Rows contiguous in both (the innermost dim's strides 1), as in the
  // head-splitting Transposes (0, 2, 1, 3): moved 16, 8 or 4 bytes at a time
  // where the row length, every other stride, both offsets and both
  // pointers allow, so that each thread moves more and divides less.
  IndexMap m = map;
  const int last = map.rank - 1;
  for (int wide : {16, 8, 4}) {
    if (last < 0 || wide <= element_bytes || wide % element_bytes != 0) continue;
    const int64_t f = wide / element_bytes;
    bool ok = map.strides[0][last] == 1 && map.strides[1][last] == 1 &&
              map.dims[last] % f == 0 && src_offset % f == 0 && dst_offset % f == 0 &&
              reinterpret_cast<uintptr_t>(src) % wide == 0 &&
              reinterpret_cast<uintptr_t>(dst) % wide == 0;
    for (int k = 0; ok && k < last; ++k) {
      ok = map.strides[0][k] % f == 0 && map.strides[1][k] % f == 0;
    }
    if (!ok) continue;
    m.dims[last] /= f;
    for (int k = 0; k < last; ++k) {
      m.strides[0][k] /= f;
      m.strides[1][k] /= f;
    }
    m.num_elements /= f;
    src_offset /= f;
    dst_offset /= f;
    element_bytes = wide;
    break;
  }
  const int64_t n = m.num_elements;
  switch (element_bytes) {
    case 16: StridedCopyKernel<16><<<GridFor(n), kThreads, 0, stream>>>(src, src_offset, dst, dst_offset, m); break;
    case 1: StridedCopyKernel<1><<<GridFor(n), kThreads, 0, stream>>>(src, src_offset, dst, dst_offset, m); break;
    case 2: StridedCopyKernel<2><<<GridFor(n), kThreads, 0, stream>>>(src, src_offset, dst, dst_offset, m); break;
    case 4: StridedCopyKernel<4><<<GridFor(n), kThreads, 0, stream>>>(src, src_offset, dst, dst_offset, m); break;
    case 8: StridedCopyKernel<8><<<GridFor(n), kThreads, 0, stream>>>(src, src_offset, dst, dst_offset, m); break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("strided copy: unsupported element size ", element_bytes));
  }
  return LaunchStatus("strided copy");
}

absl::Status LaunchGather(int element_bytes, const void* params,
                          const void* indices, bool indices_int64, void* out,
                          int64_t outer, int64_t axis_dim, int64_t inner,
                          int64_t num_indices, unsigned long long* bad_position,
                          cudaStream_t stream) {
  if (outer * num_indices * inner == 0) return absl::OkStatus();
  switch (element_bytes) {
    case 1: LaunchGatherBytes<1>(params, indices, indices_int64, out, outer, axis_dim, inner, num_indices, bad_position, stream); break;
    case 2: LaunchGatherBytes<2>(params, indices, indices_int64, out, outer, axis_dim, inner, num_indices, bad_position, stream); break;
    case 4: LaunchGatherBytes<4>(params, indices, indices_int64, out, outer, axis_dim, inner, num_indices, bad_position, stream); break;
    case 8: LaunchGatherBytes<8>(params, indices, indices_int64, out, outer, axis_dim, inner, num_indices, bad_position, stream); break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("Gather: unsupported element size ", element_bytes));
  }
  return LaunchStatus("Gather");
}

}  // namespace sluice::cuda
