// Gathers and scatters of slices at host-computed offsets: one thread per
// output element (gather) or per destination element (scatter).
#include <type_traits>

#include "kernels/cuda/device_utils.cuh"
#include "kernels/cuda/scatter_gather.h"

namespace sluice::cuda {
namespace {

template <int kBytes>
static __global__ void GatherSlicesKernel(const void* data,
                                          int64_t data_elements,
                                          const int64_t* offsets, void* out,
                                          int64_t groups, int64_t slice) {
  using U = typename Bits<kBytes>::type;
  const U* in = static_cast<const U*>(data);
  U* o = static_cast<U*>(out);
  const int64_t total = groups * slice;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t at = offsets[i / slice] + i % slice;
    o[i] = (at >= 0 && at < data_elements) ? in[at] : U(0);
  }
}

template <ScatterReduction kR, typename T>
__device__ __forceinline__ T Combine(T dst, T src) {
  using W = typename Wide<T>::type;
  if constexpr (kR == ScatterReduction::kAdd) {
    return FromWide<T>(WrapAdd(ToWide(dst), ToWide(src)));
  } else if constexpr (kR == ScatterReduction::kMul &&
                       std::is_integral_v<W>) {
    return FromWide<T>(static_cast<W>(
        static_cast<unsigned long long>(ToWide(dst)) *
        static_cast<unsigned long long>(ToWide(src))));
  } else if constexpr (kR == ScatterReduction::kMul) {
    return FromWide<T>(ToWide(dst) * ToWide(src));
  } else if constexpr (kR == ScatterReduction::kMax) {
    return ToWide(src) > ToWide(dst) ? src : dst;
  } else if constexpr (kR == ScatterReduction::kMin) {
    return ToWide(src) < ToWide(dst) ? src : dst;
  } else {
    return src;  // kNone
  }
}

template <ScatterReduction kR, typename T>
static __global__ void ScatterSlicesKernel(T* out, int64_t out_elements,
                                           const T* updates, ScatterPlan plan,
                                           int64_t slice) {
  const int64_t total = plan.num_dests * slice;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t d = i / slice;
    const int64_t e = i % slice;
    const int64_t at = plan.dest[d] + e;
    if (at < 0 || at >= out_elements) continue;
    T v = out[at];
    for (int64_t j = plan.start[d]; j < plan.start[d + 1]; ++j) {
      v = Combine<kR>(v, updates[plan.order[j] * slice + e]);
    }
    out[at] = v;
  }
}

template <typename T>
constexpr bool kScatterType = kIsArith<T> || std::is_same_v<T, bool>;

template <ScatterReduction kR, typename T>
void LaunchScatterFor(void* out, int64_t out_elements, const void* updates,
                      const ScatterPlan& plan, int64_t slice,
                      cudaStream_t stream) {
  ScatterSlicesKernel<kR, T><<<GridFor(plan.num_dests * slice), kThreads, 0,
                               stream>>>(static_cast<T*>(out), out_elements,
                                         static_cast<const T*>(updates), plan,
                                         slice);
}

}  // namespace

absl::Status LaunchGatherSlices(int element_bytes, const void* data,
                                int64_t data_elements, const int64_t* offsets,
                                void* out, int64_t groups, int64_t slice,
                                cudaStream_t stream) {
  const int64_t n = groups * slice;
  if (n == 0) return absl::OkStatus();
  const unsigned int grid = GridFor(n);
  switch (element_bytes) {
    case 1: GatherSlicesKernel<1><<<grid, kThreads, 0, stream>>>(data, data_elements, offsets, out, groups, slice); break;
    case 2: GatherSlicesKernel<2><<<grid, kThreads, 0, stream>>>(data, data_elements, offsets, out, groups, slice); break;
    case 4: GatherSlicesKernel<4><<<grid, kThreads, 0, stream>>>(data, data_elements, offsets, out, groups, slice); break;
    case 8: GatherSlicesKernel<8><<<grid, kThreads, 0, stream>>>(data, data_elements, offsets, out, groups, slice); break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("gather: unsupported element size ", element_bytes));
  }
  return LaunchStatus("gather");
}

bool HasScatterKernel(GpuDtype dtype) {
  bool found = false;
  DispatchDtype(dtype, [&](auto tag) { found = kScatterType<decltype(tag)>; });
  return found;
}

absl::Status LaunchScatterSlices(ScatterReduction reduction, GpuDtype dtype,
                                 void* out, int64_t out_elements,
                                 const void* updates, const ScatterPlan& plan,
                                 int64_t slice, cudaStream_t stream) {
  bool found = false;
  DispatchDtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kScatterType<T>) {
      found = true;
      if (plan.num_dests * slice == 0) return;
      switch (reduction) {
        case ScatterReduction::kNone:
          LaunchScatterFor<ScatterReduction::kNone, T>(out, out_elements, updates, plan, slice, stream);
          break;
        case ScatterReduction::kAdd:
          LaunchScatterFor<ScatterReduction::kAdd, T>(out, out_elements, updates, plan, slice, stream);
          break;
        case ScatterReduction::kMul:
          LaunchScatterFor<ScatterReduction::kMul, T>(out, out_elements, updates, plan, slice, stream);
          break;
        case ScatterReduction::kMax:
          LaunchScatterFor<ScatterReduction::kMax, T>(out, out_elements, updates, plan, slice, stream);
          break;
        case ScatterReduction::kMin:
          LaunchScatterFor<ScatterReduction::kMin, T>(out, out_elements, updates, plan, slice, stream);
          break;
      }
    }
  });
  if (!found) {
    return absl::UnimplementedError(
        absl::StrCat("no CUDA scatter for dtype ", static_cast<int>(dtype)));
  }
  return LaunchStatus("scatter");
}

}  // namespace sluice::cuda
