// Recurrent: the ONNX RNN, GRU and LSTM layers (attribute `cell`), in
// sequence-major layout. Inputs x [S, B, I], w [D, G*H, I], r [D, G*H, H],
// b [D, 2*G*H], sequence_lens int32 [B], initial_h and initial_c
// [D, B, H], p [D, 3*H] (LSTM peepholes); outputs y [S, D, B, H], y_h and
// y_c [D, B, H]. G is 1, 3 or 4 gates; D is 2 for "bidirectional". Per
// step, with f, g, h the cell's activations (`activations`, three per
// direction for LSTM, two for GRU, one for RNN):
//   RNN:  H = f(x W^T + H R^T + Wb + Rb)
//   GRU:  z = f(x Wz^T + H Rz^T + Wbz + Rbz), r likewise,
//         n = g(x Wh^T + (r*H) Rh^T + Rbh + Wbh), or with
//         linear_before_reset g(x Wh^T + r*(H Rh^T + Rbh) + Wbh);
//         H = (1 - z) n + z H
//   LSTM: i = f(.. + Pi*C), f_ = f(.. + Pf*C), c~ = g(..),
//         C = f_ C + i c~ (input_forget: f_ = 1 - i), o = f(.. + Po*C),
//         H = o h(C)
// Gate pre-activations are clipped to [-clip, clip] when clip > 0. A batch
// entry runs for its sequence_lens steps (the reverse direction from its
// last one); y past them is 0 and y_h / y_c hold the last step's state.
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "core/status_macros.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/launch_kernel.h"
#include "kernels/recurrent_params.h"

namespace sluice::cpu {
namespace {

class RecurrentKernel final
    : public LaunchKernel<RecurrentAttrs, ParseRecurrentAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override;

 private:
  template <typename T>
  void RunDirection(const OpKernelContext& ctx, const RecurrentSizes& z,
                    int64_t dir, T* y, T* yh, T* yc) const;
};

absl::Status RecurrentKernel::Compute(OpKernelContext* ctx) {
  RETURN_IF_ERROR(CheckHostInputs(*ctx));
  std::vector<Shape> shapes;
  for (int i = 0; i < ctx->num_inputs(); ++i) {
    shapes.push_back(ctx->input(i).shape());
  }
  ASSIGN_OR_RETURN(RecurrentSizes z,
                   CheckRecurrentShapes(attrs(), shapes,
                                        ctx->input(4).data<int32_t>()));
  ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape({z.s, z.d, z.b, z.h})));
  ASSIGN_OR_RETURN(Tensor * yh, ctx->allocate_output(1, Shape({z.d, z.b, z.h})));
  ASSIGN_OR_RETURN(Tensor * yc, ctx->allocate_output(2, Shape({z.d, z.b, z.h})));
  return VisitFloat(ctx->input(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::fill_n(y->data<T>(), y->NumElements(), T(0));
    for (int64_t dir = 0; dir < z.d; ++dir) {
      RunDirection<T>(*ctx, z, dir, y->data<T>(), yh->data<T>(),
                      yc->data<T>());
    }
    return absl::OkStatus();
  });
}

template <typename T>
void RecurrentKernel::RunDirection(const OpKernelContext& ctx,
                                   const RecurrentSizes& z, int64_t dir, T* y,
                                   T* yh, T* yc) const {
  auto f = [](T v) { return static_cast<double>(v); };
  const int64_t gh = z.g * z.h;
  const T* x = ctx.input(0).data<T>();
  const T* w = ctx.input(1).data<T>() + dir * gh * z.in;
  const T* r = ctx.input(2).data<T>() + dir * gh * z.h;
  const T* wb = ctx.input(3).data<T>() + dir * 2 * gh;
  const T* rb = wb + gh;
  const int32_t* lens = ctx.input(4).data<int32_t>();
  const T* p = ctx.input(7).data<T>() + dir * 3 * z.h;
  const Activation* a = attrs().acts.data() + dir * attrs().slots();
  auto act = [a](int slot, double v) { return ApplyActivation(a[slot], v); };
  const bool backwards = attrs().reverse || dir == 1;
  const double clip = attrs().clip;
  auto clipped = [&](double v) {
    return clip > 0 ? std::clamp(v, -clip, clip) : v;
  };
  std::vector<double> xw(gh), hr(gh), hs(z.h), cs(z.h);
  for (int64_t b = 0; b < z.b; ++b) {
    const int64_t state_at = (dir * z.b + b) * z.h;
    for (int64_t j = 0; j < z.h; ++j) {
      hs[j] = f(ctx.input(5).data<T>()[state_at + j]);
      cs[j] = f(ctx.input(6).data<T>()[state_at + j]);
    }
    const int64_t len = lens[b];
    for (int64_t step = 0; step < len; ++step) {
      const int64_t t = backwards ? len - 1 - step : step;
      const T* xt = x + (t * z.b + b) * z.in;
      for (int64_t k = 0; k < gh; ++k) {
        double a = f(wb[k]), c = f(rb[k]);
        for (int64_t i = 0; i < z.in; ++i) a += f(xt[i]) * f(w[k * z.in + i]);
        for (int64_t i = 0; i < z.h; ++i) c += hs[i] * f(r[k * z.h + i]);
        xw[k] = a;
        hr[k] = c;
      }
      if (attrs().cell == RecurrentCell::kRnn) {
        for (int64_t j = 0; j < z.h; ++j) hs[j] = act(0, clipped(xw[j] + hr[j]));
      } else if (attrs().cell == RecurrentCell::kGru) {
        std::vector<double> zg(z.h), rg(z.h);
        for (int64_t j = 0; j < z.h; ++j) {
          zg[j] = act(0, clipped(xw[j] + hr[j]));
          rg[j] = act(0, clipped(xw[z.h + j] + hr[z.h + j]));
        }
        std::vector<double> n(z.h);
        for (int64_t j = 0; j < z.h; ++j) {
          const int64_t k = 2 * z.h + j;
          double rec;
          if (attrs().linear_before_reset) {
            rec = rg[j] * hr[k];
          } else {  // (r * H) Rh^T + Rbh
            rec = f(rb[k]);
            for (int64_t i = 0; i < z.h; ++i) {
              rec += rg[i] * hs[i] * f(r[k * z.h + i]);
            }
          }
          n[j] = act(1, clipped(xw[k] + rec));
        }
        for (int64_t j = 0; j < z.h; ++j) {
          hs[j] = (1 - zg[j]) * n[j] + zg[j] * hs[j];
        }
      } else {  // lstm: gates i, o, f, c in W's rows
        for (int64_t j = 0; j < z.h; ++j) {
          const double ig = act(0, clipped(xw[j] + hr[j] + f(p[j]) * cs[j]));
          const double fg =
              attrs().input_forget
                  ? 1 - ig
                  : act(0, clipped(xw[2 * z.h + j] + hr[2 * z.h + j] +
                                   f(p[2 * z.h + j]) * cs[j]));
          const double cg = act(1, clipped(xw[3 * z.h + j] + hr[3 * z.h + j]));
          cs[j] = fg * cs[j] + ig * cg;
          const double og = act(0, clipped(xw[z.h + j] + hr[z.h + j] +
                                           f(p[z.h + j]) * cs[j]));
          hs[j] = og * act(2, cs[j]);
        }
      }
      for (int64_t j = 0; j < z.h; ++j) {
        y[((t * z.d + dir) * z.b + b) * z.h + j] = static_cast<T>(hs[j]);
      }
    }
    for (int64_t j = 0; j < z.h; ++j) {
      yh[state_at + j] = static_cast<T>(hs[j]);
      yc[state_at + j] = static_cast<T>(cs[j]);
    }
  }
}

}  // namespace

void RegisterRecurrentKernels(KernelRegistry* r) {
  r->Register(CpuKernel("Recurrent", {{"T", CpuFloatTypes()}},
                        MakeKernel<RecurrentKernel>));
}

}  // namespace sluice::cpu
