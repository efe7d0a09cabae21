// CudaKernelSpec: a CudaKernel node's attributes (docs/ops.md, "Custom CUDA
// kernels"), parsed and checked: the CUDA C++ source and kernel name NVRTC
// compiles, the compiler options, each output's shape rule and the launch
// rule. The op's shape function (graph/ops/cuda_kernel_ops.cc) and the GPU
// kernel (kernels/cuda/cuda_kernel_op.cc) both read a node through it, so a
// bad rule is an error when the graph is built, on any machine, with or
// without a GPU; only compiling the source needs one.
//
//   ASSIGN_OR_RETURN(CudaKernelSpec spec,
//                    ParseCudaKernelSpec(node.attrs(), node.num_inputs()));
//   std::vector<Shape> outs = spec.OutputShapes(input_shapes);
//   ASSIGN_OR_RETURN(CudaLaunch launch, spec.Launch(outs));
//
// A spec is immutable once parsed; thread-safe to read.
#ifndef SLUICE_GRAPH_CUDA_KERNEL_SPEC_H_
#define SLUICE_GRAPH_CUDA_KERNEL_SPEC_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/dtype.h"
#include "core/shape.h"
#include "graph/attr_map.h"

namespace sluice {

// The largest launch the rule may ask for (CUDA's limits for every GPU
// sluice runs on: compute capability 7.5 and later).
inline constexpr int64_t kMaxCudaBlockThreads = 1024;
inline constexpr std::array<int64_t, 3> kMaxCudaBlockDims = {1024, 1024, 64};
inline constexpr std::array<int64_t, 3> kMaxCudaGridDims = {
    (int64_t{1} << 31) - 1, 65535, 65535};
// Dynamic shared memory without an opt-in attribute.
inline constexpr int64_t kMaxCudaSharedMemoryBytes = 48 * 1024;

// One launch: what cudaLaunchKernel gets, and the element count passed as
// the kernel's last argument.
struct CudaLaunch {
  std::array<int64_t, 3> grid = {1, 1, 1};
  std::array<int64_t, 3> block = {1, 1, 1};
  int64_t shared_memory_bytes = 0;
  int64_t element_count = 0;  // elements of output `grid_from_output`
  // A derived grid over no elements: nothing to launch.
  bool empty() const { return grid[0] * grid[1] * grid[2] == 0; }
};

struct CudaKernelSpec {
  std::string source;       // CUDA C++, compiled by NVRTC
  std::string kernel_name;  // a name expression: "saxpy", "scale<float>"
  std::vector<std::string> options;  // NVRTC options; sluice adds the arch
  std::vector<DataType> output_dtypes;
  // Per output: the input whose shape it takes at run time, or -1 for the
  // fixed shape in `output_shapes` (fully defined).
  std::vector<int> output_shape_like;
  std::vector<Shape> output_shapes;
  std::array<int64_t, 3> block = {256, 1, 1};
  // Empty: one thread per element of output `grid_from_output`, that is
  // grid.x = ceil(elements / threads per block).
  std::vector<int64_t> grid;
  int grid_from_output = 0;
  int64_t shared_memory_bytes = 0;

  // Each output's shape from the inputs' shapes (partial during inference:
  // a "like" output is as known as its input).
  std::vector<Shape> OutputShapes(const std::vector<Shape>& inputs) const;
  // The launch for these output shapes (fully defined). INVALID_ARGUMENT
  // when a derived grid exceeds CUDA's limit.
  absl::StatusOr<CudaLaunch> Launch(const std::vector<Shape>& outputs) const;
};

// Parses and checks a CudaKernel node's attributes (every one present, as
// after graph building fills in defaults). INVALID_ARGUMENT naming the
// attribute: an empty source or kernel name, no outputs, an output with no
// shape rule or a "like" index out of [0, num_inputs), a fixed shape that
// is not fully defined, a block or grid of 0 or more than 3 entries or over
// CUDA's limits, an NVRTC option that sets the architecture (sluice picks
// it per GPU).
absl::StatusOr<CudaKernelSpec> ParseCudaKernelSpec(const AttrMap& attrs,
                                                   int num_inputs);

}  // namespace sluice

#endif  // SLUICE_GRAPH_CUDA_KERNEL_SPEC_H_
