// LinearAttention: recurrent linear attention with a [Dk, Dv] state per
// (batch, kv head), in float32 like the ONNX reference. For each step t:
//   gated:  S *= exp(decay_t)          (decay per head or per key channel)
//   delta:  v_t = beta_t * (v_t - S^T k_t)
//           S += k_t v_t^T
//   out_t = scale * q_t S              (query head h reads kv head h / group)
// Inputs are [B, T, heads*D]; past_state and present_state [B, Hkv, Dk, Dv].
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"

namespace sluice::cpu {
namespace {

struct Dims {
  int64_t b, t, hq, hkv, dk, dv;
  int64_t decay_width = 0;  // 1 (per head) or dk (per key channel)
  int64_t beta_width = 0;   // 1 (shared) or hkv
};

class LinearAttentionKernel final : public OpKernel {
 public:
  struct Attrs {
    DataType t = DT_INVALID;
    int64_t hq = 0, hkv = 0;
    float scale = 0;
    bool gated = false, delta = false;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.t, node.attrs().GetType("T"));
    ASSIGN_OR_RETURN(a.hq, node.attrs().GetInt("q_num_heads"));
    ASSIGN_OR_RETURN(a.hkv, node.attrs().GetInt("kv_num_heads"));
    ASSIGN_OR_RETURN(a.scale, node.attrs().GetFloat("scale"));
    ASSIGN_OR_RETURN(std::string rule, node.attrs().GetString("update_rule"));
    if (rule != "linear" && rule != "gated" && rule != "delta" &&
        rule != "gated_delta") {
      return absl::InvalidArgumentError(absl::StrCat(
          "update_rule must be linear, gated, delta or gated_delta, got ",
          rule));
    }
    a.gated = rule == "gated" || rule == "gated_delta";
    a.delta = rule == "delta" || rule == "gated_delta";
    if (a.hq <= 0 || a.hkv <= 0 || a.hq % a.hkv != 0) {
      return absl::InvalidArgumentError(
          "q_num_heads must be a positive multiple of kv_num_heads");
    }
    return a;
  }
  LinearAttentionKernel(const Node& node, Attrs attrs)
      : OpKernel(node), attrs_(attrs) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    for (int i = 0; i < 6; ++i) {
      RETURN_IF_ERROR(CheckDtype(ctx->input(i), attrs_.t,
                                 absl::StrCat("LinearAttention input ", i)));
    }
    ASSIGN_OR_RETURN(Dims d, CheckShapes(*ctx));
    ASSIGN_OR_RETURN(Tensor * out,
                     ctx->allocate_output(0, Shape({d.b, d.t, d.hq * d.dv})));
    ASSIGN_OR_RETURN(Tensor * state,
                     ctx->allocate_output(1, Shape({d.b, d.hkv, d.dk, d.dv})));
    return VisitFloat(attrs_.t, [&](auto tag) {
      using T = typename decltype(tag)::type;
      Run<T>(*ctx, d, out->data<T>(), state->data<T>());
      return absl::OkStatus();
    });
  }

 private:
  absl::StatusOr<Dims> CheckShapes(const OpKernelContext& ctx) const {
    const Shape& q = ctx.input(0).shape();
    const Shape& k = ctx.input(1).shape();
    const Shape& v = ctx.input(2).shape();
    if (q.rank() != 3 || k.rank() != 3 || v.rank() != 3) {
      return absl::InvalidArgumentError("query, key and value must be 3-D");
    }
    Dims d{q.dim(0), q.dim(1), attrs_.hq, attrs_.hkv, 0, 0};
    if (q.dim(2) % d.hq != 0 || v.dim(2) % d.hkv != 0) {
      return absl::InvalidArgumentError(
          "query's and value's last dims must divide by their heads");
    }
    d.dk = q.dim(2) / d.hq;
    d.dv = v.dim(2) / d.hkv;
    if (k.dim(0) != d.b || k.dim(1) != d.t || k.dim(2) != d.hkv * d.dk ||
        v.dim(0) != d.b || v.dim(1) != d.t) {
      return absl::InvalidArgumentError(absl::StrCat(
          "key ", k.DebugString(), " and value ", v.DebugString(),
          " do not match query ", q.DebugString()));
    }
    const Shape want({d.b, d.hkv, d.dk, d.dv});
    if (ctx.input(3).shape() != want) {
      return absl::InvalidArgumentError(absl::StrCat(
          "past_state ", ctx.input(3).shape().DebugString(), " must be ",
          want.DebugString()));
    }
    if (attrs_.gated) {
      const Shape& g = ctx.input(4).shape();
      if (g.rank() != 3 || g.dim(0) != d.b || g.dim(1) != d.t ||
          (g.dim(2) != d.hkv && g.dim(2) != d.hkv * d.dk)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "decay ", g.DebugString(), " must be [B, T, kv_heads] or "
            "[B, T, kv_heads*Dk]"));
      }
      d.decay_width = g.dim(2) / d.hkv;
    }
    if (attrs_.delta) {
      const Shape& bt = ctx.input(5).shape();
      if (bt.rank() != 3 || bt.dim(0) != d.b || bt.dim(1) != d.t ||
          (bt.dim(2) != d.hkv && bt.dim(2) != 1)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "beta ", bt.DebugString(), " must be [B, T, kv_heads] or "
            "[B, T, 1]"));
      }
      d.beta_width = bt.dim(2);
    }
    return d;
  }

  template <typename T>
  void Run(const OpKernelContext& ctx, const Dims& d, T* out, T* state_out) {
    const T* q = ctx.input(0).data<T>();
    const T* k = ctx.input(1).data<T>();
    const T* v = ctx.input(2).data<T>();
    const T* past = ctx.input(3).data<T>();
    const T* decay = ctx.input(4).data<T>();
    const T* beta = ctx.input(5).data<T>();
    const float scale = attrs_.scale != 0.0f
                            ? attrs_.scale
                            : static_cast<float>(1.0 / std::sqrt(d.dk));
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
          if (attrs_.gated) {
            const T* g = decay + (row * d.hkv + h) * d.decay_width;
            for (int64_t i = 0; i < d.dk; ++i) {
              const float e = std::exp(f(g[d.decay_width == 1 ? 0 : i]));
              for (int64_t m = 0; m < d.dv; ++m) s[i * d.dv + m] *= e;
            }
          }
          if (attrs_.delta) {
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

  const Attrs attrs_;
};

}  // namespace

void RegisterLinearAttentionKernels(KernelRegistry* r) {
  r->Register(CpuKernel("LinearAttention", {{"T", CpuFloatTypes()}},
                        MakeKernel<LinearAttentionKernel>));
}

}  // namespace sluice::cpu
