// NonMaxSuppression on the GPU (nms.h).
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <climits>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/cuda/device_utils.cuh"
#include "kernels/cuda/nms.h"

namespace sluice::cuda {
namespace {

constexpr int kTile = 64;         // candidates a block resolves at once
constexpr int kSelectThreads = 256;
constexpr uint32_t kExcluded = 0xffffffffu;  // a key's low half: never kept

int64_t Segments(const NmsProblem& p) { return p.batches * p.classes; }

// Bits the segment number takes above a key's 32 score bits.
int SegmentBits(int64_t segments) {
  int bits = 1;
  while (bits < 31 && (int64_t{1} << bits) < segments) ++bits;
  return bits;
}

size_t Align(size_t n) { return (n + 255) & ~size_t{255}; }

// Where each array lives in the scratch buffer.
struct Layout {
  size_t keys_in = 0, keys_out = 0, vals_in = 0, vals_out = 0, kept = 0,
         counts = 0, ends = 0, temp = 0, temp_bytes = 0, total = 0;
};

template <typename T>
T* At(void* base, size_t offset) {
  return reinterpret_cast<T*>(static_cast<char*>(base) + offset);
}
template <typename T>
const T* At(const void* base, size_t offset) {
  return reinterpret_cast<const T*>(static_cast<const char*>(base) + offset);
}

absl::Status CubStatus(cudaError_t err, const char* what) {
  return CallStatus(err, "NonMaxSuppression", what);
}

absl::StatusOr<Layout> MakeLayout(const NmsProblem& p) {
  if (p.boxes > INT_MAX) {
    return absl::UnimplementedError(absl::StrCat(
        "NonMaxSuppression with ", p.boxes, " boxes a batch on the GPU (at most ",
        INT_MAX, ")"));
  }
  const int64_t segments = Segments(p);
  if (segments >= (int64_t{1} << 31)) {
    return absl::UnimplementedError(absl::StrCat(
        "NonMaxSuppression with ", segments, " (batch, class) pairs on the GPU"));
  }
  const int64_t total = segments * p.boxes;
  Layout l;
  size_t at = 0;
  auto take = [&](size_t bytes) {
    const size_t here = at;
    at += Align(bytes);
    return here;
  };
  l.keys_in = take(total * sizeof(uint64_t));
  l.keys_out = take(total * sizeof(uint64_t));
  l.vals_in = take(total * sizeof(int32_t));
  l.vals_out = take(total * sizeof(int32_t));
  l.kept = take(total * sizeof(int32_t));
  l.counts = take(segments * sizeof(int64_t));
  l.ends = take(segments * sizeof(int64_t));
  size_t sort_bytes = 0, scan_bytes = 0;
  RETURN_IF_ERROR(CubStatus(
      cub::DeviceRadixSort::SortPairs(
          nullptr, sort_bytes, static_cast<const uint64_t*>(nullptr),
          static_cast<uint64_t*>(nullptr), static_cast<const int32_t*>(nullptr),
          static_cast<int32_t*>(nullptr), total, 0, 32 + SegmentBits(segments)),
      "sizing the sort's scratch"));
  RETURN_IF_ERROR(CubStatus(
      cub::DeviceScan::InclusiveSum(nullptr, scan_bytes,
                                    static_cast<const int64_t*>(nullptr),
                                    static_cast<int64_t*>(nullptr), segments),
      "sizing the scan's scratch"));
  l.temp_bytes = std::max<size_t>({sort_bytes, scan_bytes, 1});
  l.temp = take(l.temp_bytes);
  l.total = at;
  return l;
}

// Float bits ordered so that a larger unsigned value is a smaller float
// (descending order under an ascending sort); -0.0 counts as 0.0.
__device__ uint32_t DescendingBits(float s) {
  if (s == 0.0f) s = 0.0f;
  const uint32_t u = __float_as_uint(s);
  const uint32_t ascending = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  return ~ascending;
}

__global__ void KeysKernel(const float* scores, int64_t total, int64_t n,
                           bool thresholded, float threshold, uint64_t* keys,
                           int32_t* vals) {
  for (int64_t t = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; t < total;
       t += int64_t{gridDim.x} * blockDim.x) {
    const float s = scores[t];
    const bool candidate = !isnan(s) && (!thresholded || s > threshold);
    const uint64_t segment = static_cast<uint64_t>(t / n);
    keys[t] = (segment << 32) | (candidate ? DescendingBits(s) : kExcluded);
    vals[t] = static_cast<int32_t>(t % n);
  }
}

struct Box {
  float x_min, x_max, y_min, y_max;
};

// std::min and std::max as the CPU kernel calls them (a NaN goes where
// they put it), unlike fminf / fmaxf.
__device__ float Min(float a, float b) { return (b < a) ? b : a; }
__device__ float Max(float a, float b) { return (a < b) ? b : a; }

__device__ Box ToBox(const float* b, bool center) {
  if (center) {
    const float hw = b[2] / 2, hh = b[3] / 2;  // exact: halving
    return {__fsub_rn(b[0], hw), __fadd_rn(b[0], hw), __fsub_rn(b[1], hh),
            __fadd_rn(b[1], hh)};
  }
  return {Min(b[1], b[3]), Max(b[1], b[3]), Min(b[0], b[2]), Max(b[0], b[2])};
}

// kernels/cpu/nms.cc's Suppresses, each operation rounded on its own.
__device__ bool Suppresses(const Box& a, const Box& b, float iou_threshold) {
  const float ix_min = Max(a.x_min, b.x_min);
  const float ix_max = Min(a.x_max, b.x_max);
  if (ix_max <= ix_min) return false;
  const float iy_min = Max(a.y_min, b.y_min);
  const float iy_max = Min(a.y_max, b.y_max);
  if (iy_max <= iy_min) return false;
  const float inter = __fmul_rn(__fsub_rn(ix_max, ix_min), __fsub_rn(iy_max, iy_min));
  const float area_a = __fmul_rn(__fsub_rn(a.x_max, a.x_min), __fsub_rn(a.y_max, a.y_min));
  const float area_b = __fmul_rn(__fsub_rn(b.x_max, b.x_min), __fsub_rn(b.y_max, b.y_min));
  const float uni = __fsub_rn(__fadd_rn(area_a, area_b), inter);
  if (inter <= 0 || area_a <= 0 || area_b <= 0 || uni <= 0) return false;
  return __fdiv_rn(inter, uni) > iou_threshold;
}

// One block a segment (see nms.h, step 2).
__global__ void SelectKernel(const float* boxes, const uint64_t* keys,
                             const int32_t* order, int64_t n, int64_t classes,
                             int64_t max_keep, float iou_threshold, bool center,
                             int32_t* kept, int64_t* counts) {
  const int64_t segment = blockIdx.x;
  const int64_t base = segment * n;
  const float* batch_boxes = boxes + (segment / classes) * n * 4;
  __shared__ Box tile[kTile];
  __shared__ int32_t tile_index[kTile];
  __shared__ unsigned long long removed;  // bit t: a kept box suppresses t
  __shared__ unsigned long long mask[kTile];
  __shared__ int64_t kept_n;

  // Candidates come first in the sorted segment.
  int64_t candidates = 0;
  for (int64_t start = 0; start < n; start += blockDim.x) {
    const int64_t i = start + threadIdx.x;
    const bool yes = i < n && static_cast<uint32_t>(keys[base + i]) != kExcluded;
    candidates += __syncthreads_count(yes);
  }
  if (threadIdx.x == 0) kept_n = 0;
  __syncthreads();

  for (int64_t start = 0; start < candidates && kept_n < max_keep; start += kTile) {
    const int m = candidates - start < kTile ? static_cast<int>(candidates - start) : kTile;
    const int64_t known = kept_n;
    if (threadIdx.x == 0) removed = 0;
    if (threadIdx.x < m) {
      const int32_t index = order[base + start + threadIdx.x];
      tile_index[threadIdx.x] = index;
      tile[threadIdx.x] = ToBox(batch_boxes + int64_t{index} * 4, center);
      mask[threadIdx.x] = 0;
    }
    __syncthreads();
    // Against the boxes kept in earlier tiles.
    for (int64_t q = threadIdx.x; q < m * known; q += blockDim.x) {
      const int t = static_cast<int>(q % m);
      const int64_t k = q / m;
      const Box other = ToBox(batch_boxes + int64_t{kept[base + k]} * 4, center);
      if (Suppresses(tile[t], other, iou_threshold)) atomicOr(&removed, 1ull << t);
    }
    // Within the tile: bit j of mask[i] when i would suppress j (j > i).
    for (int q = threadIdx.x; q < m * m; q += blockDim.x) {
      const int i = q / m, j = q % m;
      if (j > i && Suppresses(tile[i], tile[j], iou_threshold)) {
        atomicOr(&mask[i], 1ull << j);
      }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      unsigned long long gone = removed;
      int64_t count = kept_n;
      for (int i = 0; i < m && count < max_keep; ++i) {
        if ((gone >> i) & 1ull) continue;
        kept[base + count++] = tile_index[i];
        gone |= mask[i];
      }
      kept_n = count;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) counts[segment] = kept_n;
}

__global__ void WriteKernel(const int32_t* kept, const int64_t* counts,
                            const int64_t* ends, int64_t n, int64_t classes,
                            int64_t* out) {
  const int64_t segment = blockIdx.x;
  const int64_t count = counts[segment];
  const int64_t first = ends[segment] - count;
  for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
    int64_t* row = out + (first + k) * 3;
    row[0] = segment / classes;
    row[1] = segment % classes;
    row[2] = kept[segment * n + k];
  }
}

}  // namespace

absl::StatusOr<size_t> NmsScratchBytes(const NmsProblem& p) {
  ASSIGN_OR_RETURN(Layout l, MakeLayout(p));
  return l.total;
}

absl::StatusOr<const int64_t*> NmsTotal(const NmsProblem& p,
                                        const void* scratch) {
  ASSIGN_OR_RETURN(Layout l, MakeLayout(p));
  return At<int64_t>(scratch, l.ends) + (Segments(p) - 1);
}

absl::Status LaunchNmsSelect(const float* boxes, const float* scores,
                             const NmsProblem& p, void* scratch,
                             size_t scratch_bytes, cudaStream_t stream) {
  ASSIGN_OR_RETURN(Layout l, MakeLayout(p));
  if (scratch_bytes < l.total) {
    return absl::InternalError("NonMaxSuppression: scratch too small");
  }
  const int64_t segments = Segments(p);
  const int64_t total = segments * p.boxes;
  uint64_t* keys_in = At<uint64_t>(scratch, l.keys_in);
  uint64_t* keys_out = At<uint64_t>(scratch, l.keys_out);
  int32_t* vals_in = At<int32_t>(scratch, l.vals_in);
  int32_t* vals_out = At<int32_t>(scratch, l.vals_out);
  int64_t* counts = At<int64_t>(scratch, l.counts);
  KeysKernel<<<GridFor(total), kThreads, 0, stream>>>(
      scores, total, p.boxes, p.thresholded, p.score_threshold, keys_in, vals_in);
  RETURN_IF_ERROR(LaunchStatus("NonMaxSuppression keys"));
  size_t temp_bytes = l.temp_bytes;
  RETURN_IF_ERROR(CubStatus(
      cub::DeviceRadixSort::SortPairs(At<void>(scratch, l.temp), temp_bytes,
                                      keys_in, keys_out, vals_in, vals_out,
                                      total, 0, 32 + SegmentBits(segments),
                                      stream),
      "sorting the scores"));
  const int64_t max_keep = std::min(p.max_per_class, p.boxes);
  SelectKernel<<<static_cast<unsigned int>(segments), kSelectThreads, 0, stream>>>(
      boxes, keys_out, vals_out, p.boxes, p.classes, max_keep, p.iou_threshold,
      p.center, At<int32_t>(scratch, l.kept), counts);
  RETURN_IF_ERROR(LaunchStatus("NonMaxSuppression select"));
  temp_bytes = l.temp_bytes;
  return CubStatus(cub::DeviceScan::InclusiveSum(At<void>(scratch, l.temp),
                                                 temp_bytes, counts,
                                                 At<int64_t>(scratch, l.ends),
                                                 segments, stream),
                   "counting the rows");
}

absl::Status LaunchNmsWrite(const NmsProblem& p, const void* scratch,
                            int64_t* out, cudaStream_t stream) {
  ASSIGN_OR_RETURN(Layout l, MakeLayout(p));
  WriteKernel<<<static_cast<unsigned int>(Segments(p)), 128, 0, stream>>>(
      At<int32_t>(scratch, l.kept), At<int64_t>(scratch, l.counts),
      At<int64_t>(scratch, l.ends), p.boxes, p.classes, out);
  return LaunchStatus("NonMaxSuppression rows");
}

}  // namespace sluice::cuda
