// Reductions: one block per output element (device_utils.cuh BlockReduce).
#include <cmath>
#include <cstdint>

#include "kernels/cuda/device_utils.cuh"
#include "kernels/cuda/reduce.h"

namespace sluice::cuda {
namespace {

template <typename W>
__device__ __forceinline__ W Lowest() {
  if constexpr (std::is_floating_point_v<W>) {
    return -INFINITY;
  } else {
    return W(INT64_MIN);  // the wide type of every integer dtype is int64
  }
}

template <ReduceOp kOp, typename T>
static __global__ void ReduceKernel(const T* in, T* out, ReduceMap map) {
  using W = typename Wide<T>::type;
  const int64_t count = map.reduced.num_elements;
  for (int64_t o = blockIdx.x; o < map.kept.num_elements; o += gridDim.x) {
    const T* base = in + MapOffset(map.kept, 0, o);
    W acc = kOp == ReduceOp::kMax ? Lowest<W>() : W(0);
    for (int64_t r = threadIdx.x; r < count; r += blockDim.x) {
      const W v = ToWide(base[MapOffset(map.reduced, 0, r)]);
      acc = kOp == ReduceOp::kMax ? MaxOp()(acc, v) : acc + v;
    }
    if constexpr (kOp == ReduceOp::kMax) {
      acc = BlockReduce<W>(acc, MaxOp());
    } else {
      acc = BlockReduce<W>(acc, SumOp());
    }
    if (threadIdx.x == 0) {
      if constexpr (kOp == ReduceOp::kMean) {
        if constexpr (std::is_floating_point_v<W>) {
          acc = count == 0 ? W(NAN) : acc / W(count);
        } else {
          acc = count == 0 ? W(0) : acc / W(count);
        }
      }
      out[o] = FromWide<T>(acc);
    }
  }
}

template <ReduceOp kOp>
absl::Status ReduceFor(GpuDtype dtype, const void* in, void* out,
                       const ReduceMap& map, cudaStream_t stream) {
  const int64_t n = map.kept.num_elements;
  const unsigned int blocks =
      static_cast<unsigned int>(n < (1 << 20) ? n : (1 << 20));
  int threads = 32;
  while (threads < map.reduced.num_elements && threads < 512) threads *= 2;
  auto launch = [&](auto tag) {
    using T = decltype(tag);
    ReduceKernel<kOp, T><<<blocks, threads, 0, stream>>>(
        static_cast<const T*>(in), static_cast<T*>(out), map);
  };
  switch (dtype) {
    case GpuDtype::kFloat: launch(float{}); break;
    case GpuDtype::kHalf: launch(__half{}); break;
    case GpuDtype::kBFloat16: launch(__nv_bfloat16{}); break;
    case GpuDtype::kDouble: launch(double{}); break;
    case GpuDtype::kInt32: launch(int32_t{}); break;
    case GpuDtype::kInt64: launch(int64_t{}); break;
    default:
      return absl::UnimplementedError(absl::StrCat(
          "no CUDA reduction kernel for dtype ", static_cast<int>(dtype)));
  }
  return LaunchStatus("reduction");
}

}  // namespace

absl::Status LaunchReduce(ReduceOp op, GpuDtype dtype, const void* in,
                          void* out, const ReduceMap& map, cudaStream_t stream) {
  if (map.kept.num_elements == 0) return absl::OkStatus();
  switch (op) {
    case ReduceOp::kSum: return ReduceFor<ReduceOp::kSum>(dtype, in, out, map, stream);
    case ReduceOp::kMean: return ReduceFor<ReduceOp::kMean>(dtype, in, out, map, stream);
    case ReduceOp::kMax: return ReduceFor<ReduceOp::kMax>(dtype, in, out, map, stream);
  }
  return absl::InvalidArgumentError("unknown reduction");
}

}  // namespace sluice::cuda
