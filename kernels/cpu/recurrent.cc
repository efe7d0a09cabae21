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
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/status_macros.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"

namespace sluice::cpu {
namespace {

struct Activation {
  std::string name;
  float alpha = 0, beta = 0;
  double operator()(double x) const {
    if (name == "Sigmoid") return 1.0 / (1.0 + std::exp(-x));
    if (name == "Tanh") return std::tanh(x);
    if (name == "Relu") return std::max(x, 0.0);
    if (name == "LeakyRelu") return x >= 0 ? x : alpha * x;
    if (name == "ThresholdedRelu") return x > alpha ? x : 0.0;
    if (name == "ScaledTanh") return alpha * std::tanh(beta * x);
    if (name == "HardSigmoid") {
      return std::clamp(alpha * x + beta, 0.0, 1.0);
    }
    if (name == "Elu") return x >= 0 ? x : alpha * (std::exp(x) - 1);
    if (name == "Softsign") return x / (1 + std::abs(x));
    if (name == "Softplus") return std::log1p(std::exp(x));
    return alpha * x + beta;  // Affine
  }
};

// The activation's default alpha and beta (ONNX's RNN activation table).
absl::StatusOr<Activation> MakeActivation(const std::string& name) {
  Activation a{name};
  if (name == "LeakyRelu") a.alpha = 0.01f;
  else if (name == "ThresholdedRelu" || name == "Elu") a.alpha = 1.0f;
  else if (name == "HardSigmoid") { a.alpha = 0.2f; a.beta = 0.5f; }
  else if (name == "ScaledTanh" || name == "Affine") a.alpha = 1.0f;
  else if (name != "Sigmoid" && name != "Tanh" && name != "Relu" &&
           name != "Softsign" && name != "Softplus") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown recurrent activation '", name, "'"));
  }
  return a;
}

struct Sizes {
  int64_t s, b, in, h, d, g;
};

class RecurrentKernel final : public OpKernel {
 public:
  struct Attrs {
    std::string cell;
    int64_t gates = 1;
    int64_t dirs = 1;
    bool reverse = false;  // the single direction runs backwards
    std::vector<Activation> acts;  // per direction, per cell slot
    float clip = 0;
    bool linear_before_reset = false;
    bool input_forget = false;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node);
  RecurrentKernel(const Node& node, Attrs attrs)
      : OpKernel(node), attrs_(std::move(attrs)) {}

  absl::Status Compute(OpKernelContext* ctx) override;

 private:
  absl::StatusOr<Sizes> CheckShapes(const OpKernelContext& ctx) const;
  template <typename T>
  void RunDirection(const OpKernelContext& ctx, const Sizes& z, int64_t dir,
                    T* y, T* yh, T* yc) const;

  const Attrs attrs_;
};

absl::StatusOr<RecurrentKernel::Attrs> RecurrentKernel::ParseAttrs(
    const Node& node) {
  Attrs a;
  ASSIGN_OR_RETURN(a.cell, node.attrs().GetString("cell"));
  int slots;
  if (a.cell == "rnn") { a.gates = 1; slots = 1; }
  else if (a.cell == "gru") { a.gates = 3; slots = 2; }
  else if (a.cell == "lstm") { a.gates = 4; slots = 3; }
  else {
    return absl::InvalidArgumentError(
        absl::StrCat("cell must be rnn, gru or lstm, got ", a.cell));
  }
  ASSIGN_OR_RETURN(std::string direction, node.attrs().GetString("direction"));
  if (direction != "forward" && direction != "reverse" &&
      direction != "bidirectional") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown direction '", direction, "'"));
  }
  a.dirs = direction == "bidirectional" ? 2 : 1;
  a.reverse = direction == "reverse";
  ASSIGN_OR_RETURN(std::string names, node.attrs().GetString("activations"));
  ASSIGN_OR_RETURN(std::vector<float> alpha,
                   node.attrs().GetFloatList("activation_alpha"));
  ASSIGN_OR_RETURN(std::vector<float> beta,
                   node.attrs().GetFloatList("activation_beta"));
  std::vector<std::string> list = absl::StrSplit(names, ',', absl::SkipEmpty());
  if (list.empty()) {
    const char* defaults[] = {"Sigmoid", "Tanh", "Tanh"};
    for (int d = 0; d < a.dirs; ++d) {
      for (int i = 0; i < slots; ++i) {
        list.push_back(a.cell == "rnn" ? "Tanh" : defaults[i]);
      }
    }
  }
  if (static_cast<int64_t>(list.size()) != slots * a.dirs) {
    return absl::InvalidArgumentError(absl::StrCat(
        a.cell, " with ", a.dirs, " direction(s) needs ", slots * a.dirs,
        " activations, got ", list.size()));
  }
  for (size_t i = 0; i < list.size(); ++i) {
    ASSIGN_OR_RETURN(Activation act, MakeActivation(list[i]));
    if (i < alpha.size()) act.alpha = alpha[i];
    if (i < beta.size()) act.beta = beta[i];
    a.acts.push_back(act);
  }
  ASSIGN_OR_RETURN(a.clip, node.attrs().GetFloat("clip"));
  ASSIGN_OR_RETURN(a.linear_before_reset,
                   node.attrs().GetBool("linear_before_reset"));
  ASSIGN_OR_RETURN(a.input_forget, node.attrs().GetBool("input_forget"));
  return a;
}

absl::StatusOr<Sizes> RecurrentKernel::CheckShapes(
    const OpKernelContext& ctx) const {
  const Shape& x = ctx.input(0).shape();
  const Shape& r = ctx.input(2).shape();
  if (x.rank() != 3 || r.rank() != 3) {
    return absl::InvalidArgumentError("x and r must be 3-D");
  }
  Sizes z{x.dim(0), x.dim(1), x.dim(2), r.dim(2), attrs_.dirs, attrs_.gates};
  auto want = [&](int i, Shape s, const char* what) -> absl::Status {
    if (ctx.input(i).shape() != s) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, " is ", ctx.input(i).shape().DebugString(), ", expected ",
          s.DebugString()));
    }
    return absl::OkStatus();
  };
  const int64_t gh = z.g * z.h;
  RETURN_IF_ERROR(want(1, Shape({z.d, gh, z.in}), "w"));
  RETURN_IF_ERROR(want(2, Shape({z.d, gh, z.h}), "r"));
  RETURN_IF_ERROR(want(3, Shape({z.d, 2 * gh}), "b"));
  RETURN_IF_ERROR(want(4, Shape({z.b}), "sequence_lens"));
  RETURN_IF_ERROR(want(5, Shape({z.d, z.b, z.h}), "initial_h"));
  RETURN_IF_ERROR(want(6, Shape({z.d, z.b, z.h}), "initial_c"));
  RETURN_IF_ERROR(want(7, Shape({z.d, 3 * z.h}), "p"));
  const int32_t* lens = ctx.input(4).data<int32_t>();
  for (int64_t i = 0; i < z.b; ++i) {
    if (lens[i] < 0 || lens[i] > z.s) {
      return absl::OutOfRangeError(absl::StrCat(
          "sequence_lens[", i, "] = ", lens[i], " is outside [0, ", z.s, "]"));
    }
  }
  return z;
}

absl::Status RecurrentKernel::Compute(OpKernelContext* ctx) {
  RETURN_IF_ERROR(CheckHostInputs(*ctx));
  ASSIGN_OR_RETURN(Sizes z, CheckShapes(*ctx));
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
void RecurrentKernel::RunDirection(const OpKernelContext& ctx, const Sizes& z,
                                   int64_t dir, T* y, T* yh, T* yc) const {
  auto f = [](T v) { return static_cast<double>(v); };
  const int64_t gh = z.g * z.h;
  const T* x = ctx.input(0).data<T>();
  const T* w = ctx.input(1).data<T>() + dir * gh * z.in;
  const T* r = ctx.input(2).data<T>() + dir * gh * z.h;
  const T* wb = ctx.input(3).data<T>() + dir * 2 * gh;
  const T* rb = wb + gh;
  const int32_t* lens = ctx.input(4).data<int32_t>();
  const T* p = ctx.input(7).data<T>() + dir * 3 * z.h;
  const int slots = static_cast<int>(attrs_.acts.size() / z.d);
  const Activation* act = attrs_.acts.data() + dir * slots;
  const bool backwards = attrs_.reverse || dir == 1;
  const double clip = attrs_.clip;
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
      if (attrs_.cell == "rnn") {
        for (int64_t j = 0; j < z.h; ++j) hs[j] = act[0](clipped(xw[j] + hr[j]));
      } else if (attrs_.cell == "gru") {
        std::vector<double> zg(z.h), rg(z.h);
        for (int64_t j = 0; j < z.h; ++j) {
          zg[j] = act[0](clipped(xw[j] + hr[j]));
          rg[j] = act[0](clipped(xw[z.h + j] + hr[z.h + j]));
        }
        std::vector<double> n(z.h);
        for (int64_t j = 0; j < z.h; ++j) {
          const int64_t k = 2 * z.h + j;
          double rec;
          if (attrs_.linear_before_reset) {
            rec = rg[j] * hr[k];
          } else {  // (r * H) Rh^T + Rbh
            rec = f(rb[k]);
            for (int64_t i = 0; i < z.h; ++i) {
              rec += rg[i] * hs[i] * f(r[k * z.h + i]);
            }
          }
          n[j] = act[1](clipped(xw[k] + rec));
        }
        for (int64_t j = 0; j < z.h; ++j) {
          hs[j] = (1 - zg[j]) * n[j] + zg[j] * hs[j];
        }
      } else {  // lstm: gates i, o, f, c in W's rows
        for (int64_t j = 0; j < z.h; ++j) {
          const double ig = act[0](clipped(xw[j] + hr[j] + f(p[j]) * cs[j]));
          const double fg =
              attrs_.input_forget
                  ? 1 - ig
                  : act[0](clipped(xw[2 * z.h + j] + hr[2 * z.h + j] +
                                   f(p[2 * z.h + j]) * cs[j]));
          const double cg = act[1](clipped(xw[3 * z.h + j] + hr[3 * z.h + j]));
          cs[j] = fg * cs[j] + ig * cg;
          const double og = act[0](clipped(xw[z.h + j] + hr[z.h + j] +
                                           f(p[z.h + j]) * cs[j]));
          hs[j] = og * act[2](cs[j]);
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
