// OneDnnConvNhwc on oneDNN's convolution_forward (forward_inference,
// direct) with nhwc activations: one primitive per (input shape, filter
// shape, post-ops, threads), the whole batch at once on an OpenMP team of
// the pool's size. See the header.
#include "kernels/cpu/onednn_conv_nhwc.h"

#include <atomic>

#if SLUICE_HAVE_ONEDNN_CONV
#include <array>
#include <cstring>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/status_macros.h"
#include "kernels/cpu/onednn_runtime.h"
#include "kernels/cpu/parallel.h"
#include "oneapi/dnnl/dnnl.hpp"
#endif

namespace sluice::cpu {
namespace {
std::atomic<int64_t> nhwc_runs{0};
}  // namespace

int64_t OneDnnConvNhwcRuns() { return nhwc_runs.load(); }

#if !SLUICE_HAVE_ONEDNN_CONV

std::unique_ptr<OneDnnConvNhwc> OneDnnConvNhwc::Create(const Conv2DParams&,
                                                       ConvActivation) {
  return nullptr;
}

#else

namespace {

using dnnl::memory;
using Tag = memory::format_tag;
constexpr auto kF32 = memory::data_type::f32;

enum KeyField { kN, kC, kH, kW, kO, kKh, kKw, kOh, kOw, kThreads, kBias,
                kSide, kKeyFields };
using PlanKey = std::array<int64_t, kKeyFields>;

struct Plan {
  dnnl::convolution_forward conv;
  memory::desc src, dst, weights, user_weights, bias, scratch;
  // The residual: read in place by a binary add post-op, or (where the
  // primitive takes no such post-op) copied into y for a `sum` post-op.
  bool side_by_sum = false;
};

// A filter reordered for one plan.
struct Weights {
  const Plan* plan;
  std::shared_ptr<Buffer> source;  // pinned, so its address is not reused
  memory value;
};

class OneDnnConvNhwcImpl final : public OneDnnConvNhwc {
 public:
  OneDnnConvNhwcImpl(const Conv2DParams& p, ConvActivation act)
      : params_(p), act_(act) {}

  absl::StatusOr<bool> Compute(OpKernelContext* ctx, const Tensor& x,
                               const Tensor& f, const float* bias,
                               const Tensor* side, Tensor* y) override {
    const auto* pool = ctx->device()->eigen_cpu_device();
    const int threads = PoolThreads(pool);
    // Primitives are made and run with the team they will have: oneDNN
    // blocks the work by its thread count.
    OmpThreads omp(threads);
    PlanKey key = {x.dim(0), x.dim(3), x.dim(1), x.dim(2), f.dim(0),
                   f.dim(1), f.dim(2), y->dim(1), y->dim(2), threads,
                   bias != nullptr, side != nullptr};
    const Plan* plan = nullptr;
    std::shared_ptr<const Weights> weights;
    try {
      plan = GetPlan(key);
      if (plan == nullptr) return false;
      weights = GetWeights(*plan, f);
    } catch (const dnnl::error& e) {
      return absl::InternalError(absl::StrCat("oneDNN convolution (NHWC): ",
                                              e.what(), " (status ", e.status,
                                              ")"));
    }
    Tensor scratch;
    if (plan->scratch.get_size() > 0) {
      ASSIGN_OR_RETURN(
          scratch,
          ctx->allocate_temp(DT_FLOAT,
                             Shape({static_cast<int64_t>(
                                 (plan->scratch.get_size() + 63) / 64 * 16)})));
    }
    if (side != nullptr && plan->side_by_sum) {
      const float* from = side->data<float>();
      float* to = y->data<float>();
      const int64_t total = y->NumElements();
      const int64_t blocks = std::max<int64_t>(1, std::min<int64_t>(
                                                      threads, total >> 14));
      RunBlocks(pool, blocks, [&](int64_t b) {
        const int64_t b0 = total * b / blocks, b1 = total * (b + 1) / blocks;
        std::memcpy(to + b0, from + b0, (b1 - b0) * sizeof(float));
      });
    }
    try {
      dnnl::engine& engine = OneDnnEngine();
      std::unordered_map<int, memory> args = {
          {DNNL_ARG_SRC, memory(plan->src, engine, x.data<float>())},
          {DNNL_ARG_WEIGHTS, weights->value},
          {DNNL_ARG_DST, memory(plan->dst, engine, y->data<float>())}};
      if (bias != nullptr) {
        args.emplace(DNNL_ARG_BIAS, memory(plan->bias, engine,
                                           const_cast<float*>(bias)));
      }
      if (side != nullptr && !plan->side_by_sum) {
        args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1,
                     memory(plan->dst, engine, side->data<float>()));
      }
      if (plan->scratch.get_size() > 0) {
        args.emplace(DNNL_ARG_SCRATCHPAD,
                     memory(plan->scratch, engine, scratch.data<float>()));
      }
      plan->conv.execute(OneDnnThreadStream(), args);
    } catch (const dnnl::error& e) {
      return absl::InternalError(absl::StrCat("oneDNN convolution (NHWC): ",
                                              e.what(), " (status ", e.status,
                                              ")"));
    }
    nhwc_runs.fetch_add(1);
    return true;
  }

 private:
  // The cached plan for `key`, made on first use; nullptr when oneDNN
  // declines the problem (also cached). Throws dnnl::error.
  const Plan* GetPlan(const PlanKey& key) {
    absl::MutexLock lock(&mu_);
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second.get();
    std::unique_ptr<Plan> plan = MakePlan(key, /*side_by_sum=*/false);
    if (plan == nullptr && key[kSide] != 0) {
      plan = MakePlan(key, /*side_by_sum=*/true);
    }
    const Plan* result = plan.get();
    plans_[key] = std::move(plan);
    return result;
  }

  // The primitive for `key`, the residual added as `side_by_sum` says;
  // nullptr where oneDNN has none, or only one it declines.
  std::unique_ptr<Plan> MakePlan(const PlanKey& key, bool side_by_sum) const {
    const Conv2DParams& p = params_;
    const int64_t groups = p.group, c = key[kC], o = key[kO];
    const int64_t kh = key[kKh], kw = key[kKw];
    const int64_t cg = c / groups, og = o / groups;
    auto plan = std::make_unique<Plan>();
    plan->side_by_sum = side_by_sum;
    plan->src = memory::desc({key[kN], c, key[kH], key[kW]}, kF32, Tag::nhwc);
    plan->dst =
        memory::desc({key[kN], o, key[kOh], key[kOw]}, kF32, Tag::nhwc);
    // The filter as sluice holds it: [O, KH, KW, C/g].
    const memory::dims w_dims = groups == 1
                                    ? memory::dims{o, c, kh, kw}
                                    : memory::dims{groups, og, cg, kh, kw};
    plan->user_weights =
        groups == 1
            ? memory::desc(w_dims, kF32, {kh * kw * cg, 1, kw * cg, cg})
            : memory::desc(w_dims, kF32,
                           {og * kh * kw * cg, kh * kw * cg, 1, kw * cg, cg});
    plan->bias = memory::desc({o}, kF32, Tag::x);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::post_ops ops;
    if (key[kSide] != 0) {
      if (side_by_sum) {
        ops.append_sum(1.0f);
      } else {
        ops.append_binary(dnnl::algorithm::binary_add, plan->dst);
      }
    }
    AppendActivation(act_, &ops);
    attr.set_post_ops(ops);
    dnnl::convolution_forward::primitive_desc pd;
    try {
      dnnl::convolution_forward::desc desc(
          dnnl::prop_kind::forward_inference,
          dnnl::algorithm::convolution_direct, plan->src,
          memory::desc(w_dims, kF32, Tag::any),
          key[kBias] != 0 ? plan->bias : memory::desc(), plan->dst,
          {p.strides[0], p.strides[1]},
          {p.dilations[0] - 1, p.dilations[1] - 1}, {p.pads[0], p.pads[1]},
          {p.pads[2], p.pads[3]});
      pd = dnnl::convolution_forward::primitive_desc(desc, attr,
                                                     OneDnnEngine());
    } catch (const dnnl::error&) {
      return nullptr;  // no implementation for this problem
    }
    if (OneDnnImplDeclined(pd.impl_info_str())) return nullptr;
    plan->weights = pd.weights_desc();
    plan->scratch = pd.scratchpad_desc();
    plan->conv = dnnl::convolution_forward(pd);
    return plan;
  }

  // The filter reordered for `plan`, cached per filter buffer
  // (ReorderedFilters). Throws dnnl::error.
  std::shared_ptr<const Weights> GetWeights(const Plan& plan,
                                            const Tensor& f) {
    absl::MutexLock lock(&mu_);
    if (auto found = weights_.Find(&plan, f.buffer().get())) return found;
    auto w = std::make_shared<Weights>();
    w->plan = &plan;
    w->source = f.buffer();
    memory user(plan.user_weights, OneDnnEngine(), f.data<float>());
    w->value = memory(plan.weights, OneDnnEngine());
    dnnl::reorder(user, w->value)
        .execute(OneDnnThreadStream(), user, w->value);
    OneDnnThreadStream().wait();
    weights_.Add(w);
    return w;
  }

  // Never change after construction.
  const Conv2DParams params_;
  const ConvActivation act_;

  absl::Mutex mu_;
  // A plan is never removed, so pointers to plans stay valid.
  absl::flat_hash_map<PlanKey, std::unique_ptr<Plan>> plans_
      ABSL_GUARDED_BY(mu_);
  ReorderedFilters<Weights> weights_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

std::unique_ptr<OneDnnConvNhwc> OneDnnConvNhwc::Create(
    const Conv2DParams& params, ConvActivation activation) {
  return std::make_unique<OneDnnConvNhwcImpl>(params, activation);
}

#endif  // SLUICE_HAVE_ONEDNN_CONV

}  // namespace sluice::cpu
