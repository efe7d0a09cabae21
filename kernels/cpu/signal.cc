// Signal ops: DFT (a direct O(n^2) transform in double along one axis),
// STFT (the same per windowed frame), the hann, hamming and blackman
// windows and MelWeightMatrix. DFT takes a real [..., N, 1] or
// complex [..., N, 2] signal; the forward transform pads or truncates it to
// the DFT length n and keeps n/2 + 1 bins when one-sided; the inverse
// divides by n, and its one-sided form (an inverse real FFT) rebuilds the
// Hermitian spectrum from the first n/2 + 1 bins and returns the real part.
#include <algorithm>
#include <cmath>
#include <complex>
#include <vector>

#include "core/status_macros.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/launch_kernel.h"
#include "kernels/signal_params.h"

namespace sluice::cpu {
namespace {

using Complex = std::complex<double>;

// out[k] = scale * sum_j in[j] e^(sign 2 pi i j k / n), k < out.size().
void Transform(const std::vector<Complex>& in, int64_t n, double sign,
               double scale, std::vector<Complex>* out) {
  const double w = sign * 2.0 * M_PI / static_cast<double>(n);
  for (size_t k = 0; k < out->size(); ++k) {
    Complex acc = 0;
    for (size_t j = 0; j < in.size(); ++j) {
      const double a = w * static_cast<double>((j * k) % n);
      acc += in[j] * Complex(std::cos(a), std::sin(a));
    }
    (*out)[k] = acc * scale;
  }
}

class DftKernel final : public LaunchKernel<DftAttrs, ParseDftAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    ASSIGN_OR_RETURN(DftPlan plan, PlanDft(x.shape(), ctx->input(1), ctx->input(2),
                                        attrs().inverse, attrs().onesided));
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, plan.out_shape));
    const int64_t outer = plan.outer, inner = plan.inner, len = plan.len, n = plan.n;
    const int64_t parts = plan.parts, out_len = plan.out_len;
    const bool irfft = plan.irfft;
    return VisitFloat(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = x.data<T>();
      T* out = y->data<T>();
      const int64_t out_parts = plan.out_parts;
      // The input positions read: n (padded with zeros) or, for irfft,
      // the n/2 + 1 bins the Hermitian spectrum is built from.
      const int64_t take = plan.take;
      std::vector<Complex> line(irfft ? n : take), res(out_len);
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t j = 0; j < inner; ++j) {
          std::fill(line.begin(), line.end(), Complex(0));
          for (int64_t s = 0; s < take; ++s) {
            const T* p = in + ((o * len + s) * inner + j) * parts;
            line[s] = Complex(static_cast<double>(p[0]),
                              parts == 2 ? static_cast<double>(p[1]) : 0.0);
          }
          if (irfft) {
            for (int64_t s = n / 2 + 1; s < n; ++s) line[s] = std::conj(line[n - s]);
          }
          Transform(line, n, attrs().inverse ? 1.0 : -1.0,
                    attrs().inverse ? 1.0 / static_cast<double>(n) : 1.0, &res);
          for (int64_t k = 0; k < out_len; ++k) {
            T* q = out + ((o * out_len + k) * inner + j) * out_parts;
            q[0] = static_cast<T>(res[k].real());
            if (out_parts == 2) q[1] = static_cast<T>(res[k].imag());
          }
        }
      }
      return absl::OkStatus();
    });
  }
};

// STFT: frames of frame_length samples every frame_step, each multiplied
// by the window (empty: all ones) and transformed; x [B, L, 1 or 2] ->
// [B, frames, bins, 2], frames = 1 + (L - frame_length) / frame_step, bins
// frame_length / 2 + 1 when one-sided.
class StftKernel final : public LaunchKernel<StftAttrs, ParseStftAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    const Tensor& window = ctx->input(2);
    ASSIGN_OR_RETURN(StftPlan plan,
                     PlanStft(x.shape(), ctx->input(1), ctx->input(3),
                              window.NumElements(), attrs().onesided));
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, plan.out_shape));
    const int64_t batch = plan.batch, len = plan.len, parts = plan.parts;
    const int64_t step = plan.step, fl = plan.frame_length;
    const int64_t frames = plan.frames, bins = plan.bins;
    return VisitFloat(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      RETURN_IF_ERROR(CheckDtype(window, x.dtype(), "window"));
      const T* in = x.data<T>();
      const T* win = window.NumElements() > 0 ? window.data<T>() : nullptr;
      T* out = y->data<T>();
      std::vector<Complex> line(fl), res(bins);
      for (int64_t b = 0; b < batch; ++b) {
        for (int64_t f = 0; f < frames; ++f) {
          for (int64_t s = 0; s < fl; ++s) {
            const T* p = in + (b * len + f * step + s) * parts;
            const double w = win ? static_cast<double>(win[s]) : 1.0;
            line[s] = w * Complex(static_cast<double>(p[0]),
                                  parts == 2 ? static_cast<double>(p[1]) : 0.0);
          }
          Transform(line, fl, -1.0, 1.0, &res);
          T* q = out + (b * frames + f) * bins * 2;
          for (int64_t k = 0; k < bins; ++k) {
            q[2 * k] = static_cast<T>(res[k].real());
            q[2 * k + 1] = static_cast<T>(res[k].imag());
          }
        }
      }
      return absl::OkStatus();
    });
  }
};

class WindowKernel final : public LaunchKernel<WindowAttrs, ParseWindowAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    ASSIGN_OR_RETURN(int64_t size, WindowSize(ctx->input(0)));
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape({size})));
    const double denom =
        static_cast<double>(attrs().periodic ? size : size - 1);
    return VisitArith(attrs().t, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* out = y->data<T>();
      for (int64_t i = 0; i < size; ++i) {
        const double a = M_PI * static_cast<double>(i) / denom;
        double v;
        if (attrs().function == WindowFunction::kHann) {
          v = std::sin(a) * std::sin(a);
        } else if (attrs().function == WindowFunction::kHamming) {
          v = 25.0 / 46.0 - (21.0 / 46.0) * std::cos(2 * a);
        } else {
          v = 0.42 - 0.5 * std::cos(2 * a) + 0.08 * std::cos(4 * a);
        }
        out[i] = static_cast<T>(v);
      }
      return absl::OkStatus();
    });
  }
};

// MelWeightMatrix: [dft_length/2 + 1, num_mel_bins] triangular filters
// between mel-spaced edges, as the ONNX reference computes them (the edges
// in float32 up to the mel scale, then in double, floored to bins).
class MelWeightMatrixKernel final
    : public LaunchKernel<MelWeightMatrixAttrs, ParseMelWeightMatrixAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    ASSIGN_OR_RETURN(MelPlan plan,
                     PlanMelWeightMatrix(ctx->input(0), ctx->input(1),
                                         ctx->input(2), ctx->input(3),
                                         ctx->input(4)));
    const int64_t rows = plan.rows, mels = plan.mels;
    std::vector<double> w(rows * mels);
    for (int64_t j = 0; j < rows; ++j) {
      for (int64_t i = 0; i < mels; ++i) {
        w[j * mels + i] = MelWeight(plan.edges[i], plan.edges[i + 1],
                                    plan.edges[i + 2], j);
      }
    }
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape({rows, mels})));
    return VisitArith(attrs().t, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* out = y->data<T>();
      for (int64_t i = 0; i < rows * mels; ++i) out[i] = static_cast<T>(w[i]);
      return absl::OkStatus();
    });
  }
};

}  // namespace

void RegisterSignalKernels(KernelRegistry* r) {
  r->Register(CpuKernel("DFT", {{"T", CpuFloatTypes()}},
                        MakeKernel<DftKernel>));
  r->Register(CpuKernel("STFT", {{"T", CpuFloatTypes()}},
                        MakeKernel<StftKernel>));
  r->Register(CpuKernel("MelWeightMatrix", {{"T", CpuArithTypes()}},
                        MakeKernel<MelWeightMatrixKernel>));
  r->Register(CpuKernel("Window", {{"T", CpuArithTypes()},
                                   {"Tsize", {DT_INT32, DT_INT64}}},
                        MakeKernel<WindowKernel>));
}

}  // namespace sluice::cpu
