// Unique over a flattened tensor on the GPU (unique.h).
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/cuda/device_utils.cuh"
#include "kernels/cuda/unique.h"

namespace sluice::cuda {
namespace {

enum class Kind { kNone, kUnsigned, kSigned, kFloat };

struct Format {
  Kind kind = Kind::kNone;
  int bytes = 0;
  uint64_t inf = 0;  // a float's +infinity bits
  uint64_t nan = 0;  // the one NaN every NaN becomes
};

Format FormatOf(GpuDtype dtype) {
  switch (dtype) {
    case GpuDtype::kFloat: return {Kind::kFloat, 4, 0x7f800000u, 0x7fc00000u};
    case GpuDtype::kDouble:
      return {Kind::kFloat, 8, 0x7ff0000000000000ull, 0x7ff8000000000000ull};
    case GpuDtype::kHalf: return {Kind::kFloat, 2, 0x7c00u, 0x7e00u};
    case GpuDtype::kBFloat16: return {Kind::kFloat, 2, 0x7f80u, 0x7fc0u};
    case GpuDtype::kBool:
    case GpuDtype::kUInt8: return {Kind::kUnsigned, 1};
    case GpuDtype::kUInt16: return {Kind::kUnsigned, 2};
    case GpuDtype::kUInt32: return {Kind::kUnsigned, 4};
    case GpuDtype::kUInt64: return {Kind::kUnsigned, 8};
    case GpuDtype::kInt8: return {Kind::kSigned, 1};
    case GpuDtype::kInt16: return {Kind::kSigned, 2};
    case GpuDtype::kInt32: return {Kind::kSigned, 4};
    case GpuDtype::kInt64: return {Kind::kSigned, 8};
    default: return {};
  }
}

size_t Align(size_t n) { return (n + 255) & ~size_t{255}; }

// The scratch arrays, each n int64s (u <= n groups), then CUB's scratch.
enum Array {
  kKeysIn,     // keys, then the group heads
  kKeysOut,    // sorted keys, then the groups' first positions as sort keys
  kIota,       // 0, 1, ... (the sorts' values)
  kPerm,       // position of each sorted element
  kGroup,      // inclusive scan of the heads: group number + 1
  kFirst,      // each group's first position
  kStart,      // each group's first sorted index
  kPos,        // each group's output position
  kByFirst,    // groups ordered by first position
  kCount,      // the number of groups (one value)
  kArrays
};

struct Layout {
  size_t offset[kArrays] = {};
  size_t temp = 0, temp_bytes = 0, total = 0;
};

absl::Status CubStatus(cudaError_t err, const char* what) {
  return CallStatus(err, "Unique", what);
}

template <typename U>
cudaError_t SortBits(void* temp, size_t* bytes, const U* keys_in, U* keys_out,
                     const int64_t* vals_in, int64_t* vals_out, int64_t n,
                     cudaStream_t stream) {
  return cub::DeviceRadixSort::SortPairs(temp, *bytes, keys_in, keys_out, vals_in,
                                         vals_out, n, 0, 8 * sizeof(U), stream);
}

// Sorts n (key, value) pairs by keys of `bytes` bytes.
cudaError_t Sort(int bytes, void* temp, size_t* temp_bytes, const void* keys_in,
                 void* keys_out, const int64_t* vals_in, int64_t* vals_out,
                 int64_t n, cudaStream_t stream) {
  switch (bytes) {
    case 1:
      return SortBits(temp, temp_bytes, static_cast<const uint8_t*>(keys_in),
                      static_cast<uint8_t*>(keys_out), vals_in, vals_out, n, stream);
    case 2:
      return SortBits(temp, temp_bytes, static_cast<const uint16_t*>(keys_in),
                      static_cast<uint16_t*>(keys_out), vals_in, vals_out, n, stream);
    case 4:
      return SortBits(temp, temp_bytes, static_cast<const uint32_t*>(keys_in),
                      static_cast<uint32_t*>(keys_out), vals_in, vals_out, n, stream);
    default:
      return SortBits(temp, temp_bytes, static_cast<const uint64_t*>(keys_in),
                      static_cast<uint64_t*>(keys_out), vals_in, vals_out, n, stream);
  }
}

absl::StatusOr<Layout> MakeLayout(GpuDtype dtype, int64_t n) {
  const Format f = FormatOf(dtype);
  if (f.kind == Kind::kNone) {
    return absl::InvalidArgumentError(
        absl::StrCat("Unique: dtype ", static_cast<int>(dtype), " has no GPU kernel"));
  }
  Layout l;
  size_t at = 0;
  for (int a = 0; a < kArrays; ++a) {
    l.offset[a] = at;
    at += Align((a == kCount ? 1 : n) * sizeof(int64_t));
  }
  size_t value_sort = 0, group_sort = 0, scan = 0;
  RETURN_IF_ERROR(CubStatus(Sort(f.bytes, nullptr, &value_sort, nullptr, nullptr,
                                 nullptr, nullptr, n, nullptr),
                            "sizing the sort's scratch"));
  RETURN_IF_ERROR(CubStatus(Sort(8, nullptr, &group_sort, nullptr, nullptr,
                                 nullptr, nullptr, n, nullptr),
                            "sizing the sort's scratch"));
  RETURN_IF_ERROR(CubStatus(
      cub::DeviceScan::InclusiveSum(nullptr, scan, static_cast<const int64_t*>(nullptr),
                                    static_cast<int64_t*>(nullptr), n),
      "sizing the scan's scratch"));
  l.temp = at;
  l.temp_bytes = std::max<size_t>({value_sort, group_sort, scan, 1});
  l.total = at + Align(l.temp_bytes);
  return l;
}

template <typename T>
T* At(void* base, size_t offset) {
  return reinterpret_cast<T*>(static_cast<char*>(base) + offset);
}

// Order-preserving unsigned keys (see unique.h, step 1).
template <typename U>
__global__ void KeysKernel(const U* x, int64_t n, Kind kind, U inf, U nan,
                           U* keys, int64_t* iota) {
  constexpr U sign = U(1) << (8 * sizeof(U) - 1);
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    U b = x[i];
    if (kind == Kind::kSigned) {
      b ^= sign;
    } else if (kind == Kind::kFloat) {
      const U magnitude = b & U(~sign);
      if (magnitude > inf) b = nan;      // every NaN alike, after +inf
      if (magnitude == 0) b = 0;         // -0.0 is 0.0
      b = (b & sign) ? U(~b) : U(b | sign);
    }
    keys[i] = b;
    iota[i] = i;
  }
}

template <typename U>
__global__ void HeadsKernel(const U* sorted, int64_t n, int64_t* heads) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    heads[i] = (i == 0 || sorted[i] != sorted[i - 1]) ? 1 : 0;
  }
}

__global__ void CountKernel(const int64_t* group, int64_t n, int64_t* count) {
  *count = group[n - 1];
}

// Each group's first sorted index and first position.
__global__ void StartsKernel(const int64_t* heads, const int64_t* group,
                             const int64_t* perm, int64_t n, int64_t* start,
                             int64_t* first) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    if (!heads[i]) continue;
    const int64_t g = group[i] - 1;
    start[g] = i;
    first[g] = perm[i];
  }
}

__global__ void IotaKernel(int64_t* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    out[i] = i;
  }
}

__global__ void ScatterPosKernel(const int64_t* by_first, int64_t u, int64_t* pos) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < u;
       i += int64_t{gridDim.x} * blockDim.x) {
    pos[by_first[i]] = i;
  }
}

template <int kBytes>
__global__ void GroupOutputsKernel(const void* x, int64_t n, int64_t u,
                                   const int64_t* start, const int64_t* first,
                                   const int64_t* pos, void* y, int64_t* indices,
                                   int64_t* counts) {
  using B = typename Bits<kBytes>::type;
  for (int64_t g = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; g < u;
       g += int64_t{gridDim.x} * blockDim.x) {
    const int64_t at = pos[g];
    static_cast<B*>(y)[at] = static_cast<const B*>(x)[first[g]];
    if (indices != nullptr) indices[at] = first[g];
    if (counts != nullptr) counts[at] = (g + 1 < u ? start[g + 1] : n) - start[g];
  }
}

__global__ void InverseKernel(const int64_t* perm, const int64_t* group,
                              const int64_t* pos, int64_t n, int64_t* inverse) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    inverse[perm[i]] = pos[group[i] - 1];
  }
}

template <typename U>
absl::Status Groups(const Format& f, const void* x, int64_t n, void* scratch,
                    const Layout& l, cudaStream_t stream) {
  U* keys_in = At<U>(scratch, l.offset[kKeysIn]);
  U* keys_out = At<U>(scratch, l.offset[kKeysOut]);
  int64_t* iota = At<int64_t>(scratch, l.offset[kIota]);
  int64_t* perm = At<int64_t>(scratch, l.offset[kPerm]);
  int64_t* heads = At<int64_t>(scratch, l.offset[kKeysIn]);  // keys done by then
  int64_t* group = At<int64_t>(scratch, l.offset[kGroup]);
  KeysKernel<U><<<GridFor(n), kThreads, 0, stream>>>(
      static_cast<const U*>(x), n, f.kind, static_cast<U>(f.inf),
      static_cast<U>(f.nan), keys_in, iota);
  RETURN_IF_ERROR(LaunchStatus("Unique keys"));
  size_t temp_bytes = l.temp_bytes;
  RETURN_IF_ERROR(CubStatus(SortBits(At<void>(scratch, l.temp), &temp_bytes, keys_in,
                                     keys_out, iota, perm, n, stream),
                            "sorting the elements"));
  HeadsKernel<U><<<GridFor(n), kThreads, 0, stream>>>(keys_out, n, heads);
  RETURN_IF_ERROR(LaunchStatus("Unique heads"));
  temp_bytes = l.temp_bytes;
  RETURN_IF_ERROR(CubStatus(
      cub::DeviceScan::InclusiveSum(At<void>(scratch, l.temp), temp_bytes, heads,
                                    group, n, stream),
      "numbering the groups"));
  CountKernel<<<1, 1, 0, stream>>>(group, n, At<int64_t>(scratch, l.offset[kCount]));
  return LaunchStatus("Unique count");
}

}  // namespace

bool HasUniqueKernel(GpuDtype dtype) { return FormatOf(dtype).kind != Kind::kNone; }

absl::StatusOr<size_t> UniqueScratchBytes(GpuDtype dtype, int64_t n) {
  ASSIGN_OR_RETURN(Layout l, MakeLayout(dtype, n));
  return l.total;
}

absl::StatusOr<const int64_t*> UniqueGroupCount(GpuDtype dtype, int64_t n,
                                                const void* scratch) {
  ASSIGN_OR_RETURN(Layout l, MakeLayout(dtype, n));
  return reinterpret_cast<const int64_t*>(static_cast<const char*>(scratch) +
                                          l.offset[kCount]);
}

absl::Status LaunchUniqueGroups(GpuDtype dtype, const void* x, int64_t n,
                                void* scratch, size_t scratch_bytes,
                                cudaStream_t stream) {
  ASSIGN_OR_RETURN(Layout l, MakeLayout(dtype, n));
  if (scratch_bytes < l.total) return absl::InternalError("Unique: scratch too small");
  const Format f = FormatOf(dtype);
  switch (f.bytes) {
    case 1: return Groups<uint8_t>(f, x, n, scratch, l, stream);
    case 2: return Groups<uint16_t>(f, x, n, scratch, l, stream);
    case 4: return Groups<uint32_t>(f, x, n, scratch, l, stream);
    default: return Groups<uint64_t>(f, x, n, scratch, l, stream);
  }
}

absl::Status LaunchUniqueOutputs(GpuDtype dtype, const void* x, int64_t n,
                                 int64_t u, bool sorted, void* scratch,
                                 size_t scratch_bytes, void* y,
                                 int64_t* indices, int64_t* inverse,
                                 int64_t* counts, cudaStream_t stream) {
  ASSIGN_OR_RETURN(Layout l, MakeLayout(dtype, n));
  if (scratch_bytes < l.total) return absl::InternalError("Unique: scratch too small");
  if (u <= 0) return absl::OkStatus();
  const Format f = FormatOf(dtype);
  const int64_t* heads = At<int64_t>(scratch, l.offset[kKeysIn]);
  const int64_t* group = At<int64_t>(scratch, l.offset[kGroup]);
  const int64_t* perm = At<int64_t>(scratch, l.offset[kPerm]);
  int64_t* start = At<int64_t>(scratch, l.offset[kStart]);
  int64_t* first = At<int64_t>(scratch, l.offset[kFirst]);
  int64_t* pos = At<int64_t>(scratch, l.offset[kPos]);
  StartsKernel<<<GridFor(n), kThreads, 0, stream>>>(heads, group, perm, n, start, first);
  RETURN_IF_ERROR(LaunchStatus("Unique starts"));
  if (sorted) {
    IotaKernel<<<GridFor(u), kThreads, 0, stream>>>(pos, u);
    RETURN_IF_ERROR(LaunchStatus("Unique positions"));
  } else {
    // The groups in order of first occurrence: sort them by first position
    // (non-negative, so its bits order as the values do).
    int64_t* iota = At<int64_t>(scratch, l.offset[kIota]);
    int64_t* by_first = At<int64_t>(scratch, l.offset[kByFirst]);
    IotaKernel<<<GridFor(u), kThreads, 0, stream>>>(iota, u);
    RETURN_IF_ERROR(LaunchStatus("Unique positions"));
    size_t temp_bytes = l.temp_bytes;
    RETURN_IF_ERROR(CubStatus(
        SortBits(At<void>(scratch, l.temp), &temp_bytes,
                 reinterpret_cast<const uint64_t*>(first),
                 At<uint64_t>(scratch, l.offset[kKeysOut]), iota, by_first, u, stream),
        "ordering the groups by first occurrence"));
    ScatterPosKernel<<<GridFor(u), kThreads, 0, stream>>>(by_first, u, pos);
    RETURN_IF_ERROR(LaunchStatus("Unique positions"));
  }
  switch (f.bytes) {
    case 1: GroupOutputsKernel<1><<<GridFor(u), kThreads, 0, stream>>>(x, n, u, start, first, pos, y, indices, counts); break;
    case 2: GroupOutputsKernel<2><<<GridFor(u), kThreads, 0, stream>>>(x, n, u, start, first, pos, y, indices, counts); break;
    case 4: GroupOutputsKernel<4><<<GridFor(u), kThreads, 0, stream>>>(x, n, u, start, first, pos, y, indices, counts); break;
    default: GroupOutputsKernel<8><<<GridFor(u), kThreads, 0, stream>>>(x, n, u, start, first, pos, y, indices, counts); break;
  }
  RETURN_IF_ERROR(LaunchStatus("Unique outputs"));
  if (inverse == nullptr) return absl::OkStatus();
  InverseKernel<<<GridFor(n), kThreads, 0, stream>>>(perm, group, pos, n, inverse);
  return LaunchStatus("Unique inverse");
}

}  // namespace sluice::cuda
