// Schema of CudaKernel (docs/ops.md, "Custom CUDA kernels"): a node that
// carries CUDA C++ source, compiled with NVRTC when a plan makes its GPU
// kernel. Its attributes are checked here, when the graph is built, on any
// machine (graph/cuda_kernel_spec.h); only compiling needs a GPU. An
// optional CPU fallback is a subgraph (as If's branches are) that takes the
// node's inputs and gives its outputs.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/dtype.h"
#include "core/status_macros.h"
#include "graph/cuda_kernel_spec.h"
#include "graph/graph.h"
#include "graph/op_registry.h"
#include "graph/shape_inference.h"

namespace sluice {
namespace {

// The fallback takes the node's inputs and gives its outputs, by dtype.
absl::Status CheckFallback(const InferenceContext& c, const Graph& g) {
  std::vector<DataType> want_in, want_out, got_in, got_out;
  for (int i = 0; i < c.num_inputs(); ++i) want_in.push_back(c.input_dtype(i));
  for (int i = 0; i < c.num_outputs(); ++i) want_out.push_back(c.output_dtype(i));
  for (const GraphInput& in : g.inputs()) got_in.push_back(in.dtype);
  for (const GraphOutput& out : g.outputs()) got_out.push_back(out.dtype);
  if (got_in != want_in || got_out != want_out) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cpu_fallback takes (", DataTypeNames(got_in), ") and gives (",
        DataTypeNames(got_out), "); the node passes (", DataTypeNames(want_in),
        ") and gives (", DataTypeNames(want_out), ")"));
  }
  return absl::OkStatus();
}

absl::Status CudaKernelFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(CudaKernelSpec spec,
                   ParseCudaKernelSpec(c.attrs(), c.num_inputs()));
  std::vector<Shape> inputs;
  for (int i = 0; i < c.num_inputs(); ++i) inputs.push_back(c.input_shape(i));
  if (const Graph* fallback = c.subgraph("cpu_fallback")) {
    RETURN_IF_ERROR(CheckFallback(c, *fallback));
  }
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
             .Attr("cpu_fallback", AttrType::kGraph, MakeGraphAttr(GraphDef()))
             .ShapeFn(CudaKernelFn)
             .Doc("A user's CUDA C++ kernel, compiled with NVRTC for each "
                  "GPU's architecture and launched once per step as "
                  "kernel_name(args..., outputs..., long long n), n the "
                  "elements of output grid_from_output; grid empty: "
                  "ceil(n / threads per block) blocks. Each output's shape "
                  "is that of input output_shape_like[i], or "
                  "output_shapes[i]. On the CPU it runs cpu_fallback (a graph "
                  "of the same inputs and outputs) when one is given.")
             .Build());
}

}  // namespace sluice
