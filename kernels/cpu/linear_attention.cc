// LinearAttention: recurrent linear attention with a [Dk, Dv] state per
// (batch, kv head), in float32 like the ONNX reference. For each step t:
//   gated:  S *= exp(decay_t)          (decay per head or per key channel)
//   delta:  v_t = beta_t * (v_t - S^T k_t)
//           S += k_t v_t^T
//   out_t = scale * q_t S              (query head h reads kv head h / group)
// Inputs are [B, T, heads*D]; past_state and present_state [B, Hkv, Dk, Dv].
#include <cmath>
#include <vector>

#include "core/status_macros.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/launch_kernel.h"
#include "kernels/linear_attention_params.h"

namespace sluice::cpu {
namespace {

class LinearAttentionKernel final
    : public LaunchKernel<LinearAttentionAttrs, ParseLinearAttentionAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    std::vector<const Tensor*> inputs;
    for (int i = 0; i < ctx->num_inputs(); ++i) inputs.push_back(&ctx->input(i));
    ASSIGN_OR_RETURN(LinearAttentionDims d,
                     CheckLinearAttentionInputs(attrs(), inputs));
    ASSIGN_OR_RETURN(Tensor * out,
                     ctx->allocate_output(0, Shape({d.b, d.t, d.hq * d.dv})));
    ASSIGN_OR_RETURN(Tensor * state,
                     ctx->allocate_output(1, Shape({d.b, d.hkv, d.dk, d.dv})));
    return VisitFloat(attrs().t, [&](auto tag) {
      using T = typename decltype(tag)::type;
      Run<T>(*ctx, d, out->data<T>(), state->data<T>());
      return absl::OkStatus();
    });
  }

 private:
  template <typename T>
  void Run(const OpKernelContext& ctx, const LinearAttentionDims& d, T* out,
           T* state_out) {
    const T* q = ctx.input(0).data<T>();
    const T* k = ctx.input(1).data<T>();
    const T* v = ctx.input(2).data<T>();
    const T* past = ctx.input(3).data<T>();
    const T* decay = ctx.input(4).data<T>();
    const T* beta = ctx.input(5).data<T>();
    const float scale = LinearAttentionScale(attrs(), d);
    const int64_t group = d.hq / d.hkv;
    const int64_t sdim = d.dk * d.dv;
    std::vector<float> s(sdim), vt(d.dv);
    auto f = [](T x) { return static_cast<float>(x); };
    for (int64_t b = 0; b < d.b; ++b) {
      for (int64_t h = 0; h < d.hkv; ++h) {
        const int64_t state_at = (b * d.hkv + h) * sdim;
        for (int64_t i = 0; i < sdim; ++i) s[i] = f(past[state_at + i]);
        for (int64_t t = 0; t < d.t; ++t) {
          const int64_t row = b * d.t + t;
          const T* kt = k + (row * d.hkv + h) * d.dk;
          const T* vrow = v + (row * d.hkv + h) * d.dv;
          for (int64_t m = 0; m < d.dv; ++m) vt[m] = f(vrow[m]);
          if (attrs().gated) {
            const T* g = decay + (row * d.hkv + h) * d.decay_width;
            for (int64_t i = 0; i < d.dk; ++i) {
              const float e = std::exp(f(g[d.decay_width == 1 ? 0 : i]));
              for (int64_t m = 0; m < d.dv; ++m) s[i * d.dv + m] *= e;
            }
          }
          if (attrs().delta) {
            const float bt =
                f(beta[row * d.beta_width + (d.beta_width == 1 ? 0 : h)]);
            for (int64_t m = 0; m < d.dv; ++m) {
              float r = 0;
              for (int64_t i = 0; i < d.dk; ++i) r += s[i * d.dv + m] * f(kt[i]);
              vt[m] = bt * (vt[m] - r);
            }
          }
          for (int64_t i = 0; i < d.dk; ++i) {
            for (int64_t m = 0; m < d.dv; ++m) s[i * d.dv + m] += f(kt[i]) * vt[m];
          }
          for (int64_t g = 0; g < group; ++g) {
            const int64_t hq = h * group + g;
            const T* qt = q + (row * d.hq + hq) * d.dk;
            T* o = out + (row * d.hq + hq) * d.dv;
            for (int64_t m = 0; m < d.dv; ++m) {
              float acc = 0;
              for (int64_t i = 0; i < d.dk; ++i) acc += f(qt[i]) * s[i * d.dv + m];
              o[m] = static_cast<T>(scale * acc);
            }
          }
        }
        for (int64_t i = 0; i < sdim; ++i) {
          state_out[state_at + i] = static_cast<T>(s[i]);
        }
      }
    }
  }
};

}  // namespace

void RegisterLinearAttentionKernels(KernelRegistry* r) {
  r->Register(CpuKernel("LinearAttention", {{"T", CpuFloatTypes()}},
                        MakeKernel<LinearAttentionKernel>));
}

}  // namespace sluice::cpu
