#include "kernels/cuda/recurrent.h"

#include "kernels/cuda/device_utils.cuh"

namespace sluice::cuda {
namespace {

template <typename T>
__device__ __forceinline__ double D(T v) {
  return static_cast<double>(ToWide(v));
}

__device__ __forceinline__ double Clipped(double v, float clip) {
  if (clip <= 0) return v;
  const double c = clip;
  return v < -c ? -c : (v > c ? c : v);
}

// One block per (direction, batch entry); see recurrent.h.
template <typename T>
__global__ void RecurrentKernel(RecurrentLaunch l) {
  const RecurrentSizes z = l.z;
  const int64_t blk = blockIdx.x;
  const int64_t dir = blk / z.b;
  const int64_t b = blk % z.b;
  const int64_t gh = z.g * z.h;
  double* xw = l.scratch + blk * (2 * gh + 4 * z.h);
  double* hr = xw + gh;
  double* hs = hr + gh;
  double* cs = hs + z.h;
  double* zg = cs + z.h;
  double* rg = zg + z.h;
  const T* x = static_cast<const T*>(l.x);
  const T* w = static_cast<const T*>(l.w) + dir * gh * z.in;
  const T* r = static_cast<const T*>(l.r) + dir * gh * z.h;
  const T* wb = static_cast<const T*>(l.bias) + dir * 2 * gh;
  const T* rb = wb + gh;
  const T* p = static_cast<const T*>(l.p) + dir * 3 * z.h;
  const Activation* act = l.acts + dir * l.slots;
  T* y = static_cast<T*>(l.y);
  const int64_t state_at = (dir * z.b + b) * z.h;
  const int64_t tid = threadIdx.x;
  const int64_t nt = blockDim.x;
  for (int64_t j = tid; j < z.h; j += nt) {
    hs[j] = D(static_cast<const T*>(l.initial_h)[state_at + j]);
    cs[j] = D(static_cast<const T*>(l.initial_c)[state_at + j]);
  }
  __syncthreads();
  const bool backwards = l.reverse || dir == 1;
  const int64_t len = l.lens[b];
  for (int64_t step = 0; step < len; ++step) {
    const int64_t t = backwards ? len - 1 - step : step;
    const T* xt = x + (t * z.b + b) * z.in;
    for (int64_t k = tid; k < gh; k += nt) {
      double a = D(wb[k]), c = D(rb[k]);
      for (int64_t i = 0; i < z.in; ++i) a += D(xt[i]) * D(w[k * z.in + i]);
      for (int64_t i = 0; i < z.h; ++i) c += hs[i] * D(r[k * z.h + i]);
      xw[k] = a;
      hr[k] = c;
    }
    __syncthreads();  // every gate row is in; hs is read no more this step
    if (l.cell == RecurrentCell::kRnn) {
      for (int64_t j = tid; j < z.h; j += nt) {
        hs[j] = ApplyActivation(act[0], Clipped(xw[j] + hr[j], l.clip));
      }
    } else if (l.cell == RecurrentCell::kGru) {
      for (int64_t j = tid; j < z.h; j += nt) {
        zg[j] = ApplyActivation(act[0], Clipped(xw[j] + hr[j], l.clip));
        rg[j] = ApplyActivation(act[0],
                                Clipped(xw[z.h + j] + hr[z.h + j], l.clip));
      }
      __syncthreads();  // the reset gate of every unit is in
      for (int64_t j = tid; j < z.h; j += nt) {
        const int64_t k = 2 * z.h + j;
        double rec;
        if (l.linear_before_reset) {
          rec = rg[j] * hr[k];
        } else {  // (r * H) Rh^T + Rbh
          rec = D(rb[k]);
          for (int64_t i = 0; i < z.h; ++i) {
            rec += rg[i] * hs[i] * D(r[k * z.h + i]);
          }
        }
        // n, kept in xw's row k (only this thread reads it).
        xw[k] = ApplyActivation(act[1], Clipped(xw[k] + rec, l.clip));
      }
      __syncthreads();  // every n is in; hs is read no more this step
      for (int64_t j = tid; j < z.h; j += nt) {
        hs[j] = (1 - zg[j]) * xw[2 * z.h + j] + zg[j] * hs[j];
      }
    } else {  // lstm: gates i, o, f, c in W's rows
      for (int64_t j = tid; j < z.h; j += nt) {
        const double ig = ApplyActivation(
            act[0], Clipped(xw[j] + hr[j] + D(p[j]) * cs[j], l.clip));
        const double fg =
            l.input_forget
                ? 1 - ig
                : ApplyActivation(act[0],
                                  Clipped(xw[2 * z.h + j] + hr[2 * z.h + j] +
                                              D(p[2 * z.h + j]) * cs[j],
                                          l.clip));
        const double cg = ApplyActivation(
            act[1], Clipped(xw[3 * z.h + j] + hr[3 * z.h + j], l.clip));
        cs[j] = fg * cs[j] + ig * cg;
        const double og = ApplyActivation(
            act[0], Clipped(xw[z.h + j] + hr[z.h + j] + D(p[z.h + j]) * cs[j],
                            l.clip));
        hs[j] = og * ApplyActivation(act[2], cs[j]);
      }
    }
    for (int64_t j = tid; j < z.h; j += nt) {
      y[((t * z.d + dir) * z.b + b) * z.h + j] = FromWide<T>(hs[j]);
    }
    __syncthreads();  // the new state is complete before the next step
  }
  for (int64_t j = tid; j < z.h; j += nt) {
    static_cast<T*>(l.y_h)[state_at + j] = FromWide<T>(hs[j]);
    static_cast<T*>(l.y_c)[state_at + j] = FromWide<T>(cs[j]);
  }
}

}  // namespace

int64_t RecurrentScratchDoubles(const RecurrentSizes& z) {
  return z.d * z.b * (2 * z.g * z.h + 4 * z.h);  // as the kernel carves it
}

absl::Status LaunchRecurrent(const RecurrentLaunch& l, cudaStream_t stream) {
  const int64_t blocks = l.z.d * l.z.b;
  if (blocks == 0) return absl::OkStatus();
  if (blocks > 0x7fffffff) {
    return absl::UnimplementedError("Recurrent: too many sequences");
  }
  const unsigned int grid = static_cast<unsigned int>(blocks);
  switch (l.dtype) {
    case GpuDtype::kFloat:
      RecurrentKernel<float><<<grid, kThreads, 0, stream>>>(l);
      break;
    case GpuDtype::kDouble:
      RecurrentKernel<double><<<grid, kThreads, 0, stream>>>(l);
      break;
    case GpuDtype::kHalf:
      RecurrentKernel<__half><<<grid, kThreads, 0, stream>>>(l);
      break;
    case GpuDtype::kBFloat16:
      RecurrentKernel<__nv_bfloat16><<<grid, kThreads, 0, stream>>>(l);
      break;
    default:
      return absl::InvalidArgumentError("Recurrent: not a float dtype");
  }
  return LaunchStatus("Recurrent");
}

}  // namespace sluice::cuda
