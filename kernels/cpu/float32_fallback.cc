// Float32 fallbacks for float16 / bfloat16 nodes (float32_fallback.h).
#include "kernels/cpu/float32_fallback.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/status_macros.h"
#include "kernels/kernel.h"

namespace sluice::cpu {
namespace {

bool IsReduced(DataType t) { return t == DT_FLOAT16 || t == DT_BFLOAT16; }

template <typename From, typename To>
void Convert(const Tensor& from, const Tensor& to) {
  const From* src = from.data<From>();
  To* dst = to.data<To>();
  for (int64_t i = 0; i < from.NumElements(); ++i) {
    dst[i] = static_cast<To>(static_cast<float>(src[i]));
  }
}

// `t` (float16 or bfloat16) as a new float32 tensor from `ctx`.
absl::StatusOr<Tensor> ToFloat32(OpKernelContext* ctx, const Tensor& t) {
  ASSIGN_OR_RETURN(Tensor f, ctx->allocate_temp(DT_FLOAT, t.shape()));
  if (t.dtype() == DT_FLOAT16) {
    Convert<half, float>(t, f);
  } else {
    Convert<bfloat16, float>(t, f);
  }
  return f;
}

class Float32Fallback final : public OpKernel {
 public:
  Float32Fallback(const Node& node, std::unique_ptr<OpKernel> inner)
      : OpKernel(node), inner_(std::move(inner)) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    std::vector<Tensor> inputs;
    inputs.reserve(ctx->num_inputs());
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      const Tensor& in = ctx->input(i);
      if (in.valid() && IsReduced(in.dtype())) {
        ASSIGN_OR_RETURN(Tensor f, ToFloat32(ctx, in));
        inputs.push_back(std::move(f));
      } else {
        inputs.push_back(in);
      }
    }
    std::vector<Tensor> outputs(ctx->num_outputs());
    OpKernelContext inner(&ctx->node(), ctx->device(), inputs,
                          absl::MakeSpan(outputs));
    inner.set_reduced_outputs_in_float32(true);
    RETURN_IF_ERROR(inner_->Compute(&inner));
    for (int p = 0; p < ctx->num_outputs(); ++p) {
      const DataType want = node().output_dtype(p);
      const Tensor& got = outputs[p];
      if (!got.valid() || !IsReduced(want) || got.dtype() != DT_FLOAT) {
        ctx->set_output(p, got);
        continue;
      }
      ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(p, got.shape()));
      if (want == DT_FLOAT16) {
        Convert<float, half>(got, *y);
      } else {
        Convert<float, bfloat16>(got, *y);
      }
    }
    return absl::OkStatus();
  }

 private:
  std::unique_ptr<OpKernel> inner_;
};

// The ops whose float16 / bfloat16 nodes reduced_precision makes and whose
// CPU kernels are float32 only.
constexpr const char* kOps[] = {
    "Conv2D",  "FusedConv2D",   "ConvND", "ConvTranspose", "MaxPool",
    "AvgPool", "GlobalAvgPool", "PoolND", "ReduceMean",    "ReduceMax",
    "ReduceMin", "FusedMatMul"};

}  // namespace

void RegisterFloat32Fallbacks(KernelRegistry* registry) {
  for (const char* op : kOps) {
    std::vector<KernelDef> add;
    bool has_reduced = false;
    for (const KernelDef* def : registry->KernelsFor(op)) {
      if (def->device != DeviceType::kCpu) continue;
      auto t = def->type_constraints.find("T");
      if (t == def->type_constraints.end()) continue;
      const std::vector<DataType>& types = t->second;
      if (std::find(types.begin(), types.end(), DT_FLOAT16) != types.end()) {
        has_reduced = true;
      }
      if (std::find(types.begin(), types.end(), DT_FLOAT) == types.end()) {
        continue;
      }
      KernelDef copy = *def;
      copy.type_constraints["T"] = {DT_FLOAT16, DT_BFLOAT16};
      KernelFactory inner = def->factory;
      copy.factory = [inner](const Node& node)
          -> absl::StatusOr<std::unique_ptr<OpKernel>> {
        ASSIGN_OR_RETURN(std::unique_ptr<OpKernel> k, inner(node));
        return std::unique_ptr<OpKernel>(
            std::make_unique<Float32Fallback>(node, std::move(k)));
      };
      add.push_back(std::move(copy));
    }
    if (has_reduced) continue;
    for (KernelDef& def : add) registry->Register(std::move(def));
  }
}

}  // namespace sluice::cpu
