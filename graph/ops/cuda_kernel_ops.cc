// Schema of CudaKernel (docs/ops.md, "Custom CUDA kernels"): a node that
// carries CUDA C++ source, compiled with NVRTC when a plan makes its GPU
// kernel. Its attributes are checked here, when the graph is built, on any
// machine (graph/cuda_kernel_spec.h); only compiling needs a GPU.
#include <vector>

#include "core/status_macros.h"
#include "graph/cuda_kernel_spec.h"
#include "graph/op_registry.h"
#include "graph/shape_inference.h"

namespace sluice {
namespace {

absl::Status CudaKernelFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(CudaKernelSpec spec,
                   ParseCudaKernelSpec(c.attrs(), c.num_inputs()));
  std::vector<Shape> inputs;
  for (int i = 0; i < c.num_inputs(); ++i) inputs.push_back(c.input_shape(i));
  std::vector<Shape> outputs = spec.OutputShapes(inputs);
  for (int i = 0; i < c.num_outputs(); ++i) c.set_output_shape(i, outputs[i]);
  return absl::OkStatus();
}

}  // namespace

void RegisterCudaKernelOps(OpRegistry* r) {
  RegisterOrDie(
      r, OpDefBuilder("CudaKernel")
             .InputTypeList("args", "Tin")
             .OutputTypeList("outputs", "output_dtypes")
             .Attr("Tin", AttrType::kListType)
             .Attr("output_dtypes", AttrType::kListType)
             .Attr("source", AttrType::kString)
             .Attr("kernel_name", AttrType::kString)
             .Attr("output_shapes", AttrType::kListShape, MakeShapeListAttr({}))
             .Attr("output_shape_like", AttrType::kListInt, MakeIntListAttr({}))
             .Attr("block", AttrType::kListInt, MakeIntListAttr({256}))
             .Attr("grid", AttrType::kListInt, MakeIntListAttr({}))
             .Attr("grid_from_output", AttrType::kInt, MakeIntAttr(0))
             .Attr("shared_memory_bytes", AttrType::kInt, MakeIntAttr(0))
             .Attr("options", AttrType::kListString, MakeStringListAttr({}))
             .ShapeFn(CudaKernelFn)
             .Doc("A user's CUDA C++ kernel, compiled with NVRTC for each "
                  "GPU's architecture and launched once per step as "
                  "kernel_name(args..., outputs..., long long n), n the "
                  "elements of output grid_from_output; grid empty: "
                  "ceil(n / threads per block) blocks. Each output's shape "
                  "is that of input output_shape_like[i], or "
                  "output_shapes[i]. GPU only.")
             .Build());
}

}  // namespace sluice
