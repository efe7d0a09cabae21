// MatMul: batched GEMM over the last two dimensions, with broadcast batch
// dimensions and transpose flags. float and double run on Eigen directly;
// float16 and bfloat16 are widened to float scratch tensors first.
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/parallel.h"

namespace sluice::cpu {
namespace {

// A batch of fewer products than threads cuts each product into tiles only
// when it has at least this many multiply-adds.
constexpr int64_t kSplitEachMacs = int64_t{8} << 20;

// Where each batch's matrices start: the products are out[i] = a[a_off[i]]
// x b[b_off[i]] (offsets in matrices, not elements).
struct BatchPlan {
  Shape batch_shape;
  std::vector<int64_t> a_off, b_off;
};

absl::StatusOr<BatchPlan> PlanBatches(const Shape& a, const Shape& b) {
  const Shape ab(absl::MakeConstSpan(a.dims()).subspan(0, a.rank() - 2));
  const Shape bb(absl::MakeConstSpan(b.dims()).subspan(0, b.rank() - 2));
  BatchPlan plan;
  ASSIGN_OR_RETURN(plan.batch_shape, BroadcastShapes({&ab, &bb}));
  const int64_t count = plan.batch_shape.num_elements();
  plan.a_off.reserve(count);
  plan.b_off.reserve(count);
  BroadcastPlan<2> walk(plan.batch_shape, {&ab, &bb});
  walk.ForEachRow(0, walk.rows(), [&](int64_t, const int64_t* in) {
    for (int64_t j = 0; j < walk.inner(); ++j) {
      plan.a_off.push_back(in[0] + j * walk.inner_stride(0));
      plan.b_off.push_back(in[1] + j * walk.inner_stride(1));
    }
  });
  return plan;
}

// Widens a 16-bit float tensor into a float scratch tensor.
template <typename T>
absl::StatusOr<Tensor> ToFloat(OpKernelContext* ctx, const Tensor& t) {
  ASSIGN_OR_RETURN(Tensor f, ctx->allocate_temp(DT_FLOAT, t.shape()));
  const T* in = t.data<T>();
  float* out = f.data<float>();
  for (int64_t i = 0; i < t.NumElements(); ++i) out[i] = static_cast<float>(in[i]);
  return f;
}

class MatMulKernel final : public OpKernel {
 public:
  struct Attrs {
    DataType t = DT_INVALID;
    bool transpose_a = false;
    bool transpose_b = false;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.t, node.attrs().GetType("T"));
    // Absent: false.
    if (node.attrs().Has("transpose_a")) {
      ASSIGN_OR_RETURN(a.transpose_a, node.attrs().GetBool("transpose_a"));
    }
    if (node.attrs().Has("transpose_b")) {
      ASSIGN_OR_RETURN(a.transpose_b, node.attrs().GetBool("transpose_b"));
    }
    return a;
  }
  MatMulKernel(const Node& node, Attrs attrs)
      : OpKernel(node),
        t_(attrs.t),
        ta_(attrs.transpose_a),
        tb_(attrs.transpose_b) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    const DataType t = t_;
    RETURN_IF_ERROR(CheckDtype(a, t, "input a"));
    RETURN_IF_ERROR(CheckDtype(b, t, "input b"));
    if (a.rank() < 2 || b.rank() < 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "MatMul needs operands of rank >= 2, got ", a.shape().DebugString(),
          " and ", b.shape().DebugString()));
    }
    const int64_t m = a.dim(a.rank() - (ta_ ? 1 : 2));
    const int64_t k = a.dim(a.rank() - (ta_ ? 2 : 1));
    const int64_t kb = b.dim(b.rank() - (tb_ ? 1 : 2));
    const int64_t n = b.dim(b.rank() - (tb_ ? 2 : 1));
    if (k != kb) {
      return absl::InvalidArgumentError(absl::StrCat(
          "MatMul inner dimensions differ: a ", a.shape().DebugString(),
          (ta_ ? " (transposed)" : ""), " has k=", k, ", b ",
          b.shape().DebugString(), (tb_ ? " (transposed)" : ""), " has k=",
          kb));
    }
    ASSIGN_OR_RETURN(BatchPlan plan, PlanBatches(a.shape(), b.shape()));
    Shape out_shape = plan.batch_shape;
    out_shape.AddDim(m);
    out_shape.AddDim(n);
    ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, out_shape));
    if (out->NumElements() == 0) return absl::OkStatus();
    return VisitFloat(t, [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        Run<T>(*ctx, a.data<T>(), b.data<T>(), out->data<T>(), plan, m, n, k);
      } else {
        ASSIGN_OR_RETURN(Tensor af, ToFloat<T>(ctx, a));
        ASSIGN_OR_RETURN(Tensor bf, ToFloat<T>(ctx, b));
        ASSIGN_OR_RETURN(Tensor of, ctx->allocate_temp(DT_FLOAT, out_shape));
        Run<float>(*ctx, af.data<float>(), bf.data<float>(), of.data<float>(),
                   plan, m, n, k);
        const float* src = of.data<float>();
        T* dst = out->data<T>();
        for (int64_t i = 0; i < out->NumElements(); ++i) dst[i] = T(src[i]);
      }
      return absl::OkStatus();
    });
  }

 private:
  // One product, or fewer products than threads each large enough to cut
  // into good tiles (kSplitEachMacs), use the pool inside each GEMM; other
  // batches split over the pool, one serial product per task (attention's
  // heads: 12 products of 1M multiply-adds are 12 tasks, not 12 regions of
  // tiles too small to pay for their hand-off).
  template <typename T>
  void Run(const OpKernelContext& ctx, const T* a, const T* b, T* c,
           const BatchPlan& plan, int64_t m, int64_t n, int64_t k) const {
    const int64_t batches = static_cast<int64_t>(plan.a_off.size());
    const auto* pool = ctx.device()->eigen_cpu_device();
    const int threads = PoolThreads(pool);
    const bool split_each =
        batches == 1 || (m * n * k >= kSplitEachMacs && batches < threads);
    auto one = [&](int64_t i, const Eigen::ThreadPoolDevice* p) {
      Gemm<T>(p, a + plan.a_off[i] * m * k, b + plan.b_off[i] * k * n,
              c + i * m * n, m, n, k, ta_, tb_);
    };
    if (split_each) {
      for (int64_t i = 0; i < batches; ++i) one(i, pool);
      return;
    }
    ParallelFor(ctx, batches, 2.0 * static_cast<double>(m * n * k),
                [&](int64_t begin, int64_t end) {
                  for (int64_t i = begin; i < end; ++i) one(i, nullptr);
                });
  }

  const DataType t_;
  const bool ta_;
  const bool tb_;
};

}  // namespace

void RegisterMatMulKernels(KernelRegistry* r) {
  r->Register(CpuKernel("MatMul", {{"T", CpuMatMulTypes()}},
                        MakeKernel<MatMulKernel>));
}

}  // namespace sluice::cpu
