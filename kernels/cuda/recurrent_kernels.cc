// The CUDA OpKernel for Recurrent (ONNX RNN, GRU, LSTM). sequence_lens is a
// host-memory input: the kernel checks it on the host, with the CPU
// kernel's checks and messages (kernels/recurrent_params.h), then copies it
// to the GPU for the launch (kernels/cuda/recurrent.h).
#include <utility>
#include <vector>

#include "core/status_macros.h"
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/recurrent.h"
#include "kernels/recurrent_params.h"

namespace sluice::cuda {
namespace {

class RecurrentKernel final : public OpKernel {
 public:
  using Attrs = RecurrentAttrs;
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    ASSIGN_OR_RETURN(Attrs a, ParseRecurrentAttrs(node));
    if (a.acts.size() > kMaxRecurrentActivations) {
      return absl::InternalError("more recurrent activations than slots");
    }
    return a;
  }
  RecurrentKernel(const Node& node, Attrs attrs)
      : OpKernel(node), attrs_(std::move(attrs)) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, /*host_inputs=*/{4}));
    std::vector<Shape> shapes;
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      shapes.push_back(ctx->input(i).shape());
    }
    const Tensor& lens = ctx->input(4);
    ASSIGN_OR_RETURN(RecurrentSizes z,
                     CheckRecurrentShapes(attrs_, shapes, lens.data<int32_t>()));
    const DataType t = ctx->input(0).dtype();
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(
                                     0, Shape({z.s, z.d, z.b, z.h}), t));
    ASSIGN_OR_RETURN(Tensor * yh,
                     ctx->allocate_output(1, Shape({z.d, z.b, z.h}), t));
    ASSIGN_OR_RETURN(Tensor * yc,
                     ctx->allocate_output(2, Shape({z.d, z.b, z.h}), t));
    if (y->NumElements() > 0) {
      RETURN_IF_ERROR(CudaStatus(
          cudaMemsetAsync(y->raw_data(), 0,
                          y->NumElements() * DataTypeSize(t), gpu.stream),
          "zeroing Recurrent's y"));
    }
    if (z.d * z.b * z.h == 0) return absl::OkStatus();
    ASSIGN_OR_RETURN(Tensor scratch,
                     ctx->allocate_temp(DT_DOUBLE,
                                        Shape({RecurrentScratchDoubles(z)})));
    ASSIGN_OR_RETURN(Tensor dev_lens, gpu.device->CopyToDevice(lens));
    RecurrentLaunch l;
    l.dtype = ToGpuDtype(t);
    l.cell = attrs_.cell;
    l.z = z;
    l.reverse = attrs_.reverse;
    l.linear_before_reset = attrs_.linear_before_reset;
    l.input_forget = attrs_.input_forget;
    l.clip = attrs_.clip;
    l.slots = attrs_.slots();
    for (size_t i = 0; i < attrs_.acts.size(); ++i) l.acts[i] = attrs_.acts[i];
    l.x = ctx->input(0).raw_data();
    l.w = ctx->input(1).raw_data();
    l.r = ctx->input(2).raw_data();
    l.bias = ctx->input(3).raw_data();
    l.initial_h = ctx->input(5).raw_data();
    l.initial_c = ctx->input(6).raw_data();
    l.p = ctx->input(7).raw_data();
    l.lens = dev_lens.data<int32_t>();
    l.y = y->raw_data();
    l.y_h = yh->raw_data();
    l.y_c = yc->raw_data();
    l.scratch = scratch.data<double>();
    return LaunchRecurrent(l, gpu.stream);
  }

 private:
  const Attrs attrs_;
};

}  // namespace

void RegisterRecurrentKernels(KernelRegistry* registry) {
  RegisterGpu(registry, "Recurrent", {{"T", GpuFloatTypes()}},
              MakeKernel<RecurrentKernel>, /*host_memory_inputs=*/{4});
}

}  // namespace sluice::cuda
