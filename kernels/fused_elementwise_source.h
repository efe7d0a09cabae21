// What the FusedElementwise kernels share, CUDA-free: how the inputs
// broadcast to the output (a FusedElementwiseLayout: the output's
// dimensions merged where every input's strides chain, each input read
// flat, splat or strided), and the CUDA C++ source the GPU kernel
// generates from a program for one dtype and one broadcast class (merged
// rank, each input's access, 32- or 64-bit indexing), which NVRTC compiles
// (kernels/cuda/nvrtc_kernel_cache.h caches it per source, so per
// (program, dtype, class)).
//
//   ASSIGN_OR_RETURN(FusedElementwiseLayout l,
//                    LayoutFusedElementwise(out_shape, {&a.shape(), &b.shape()}));
//   std::string src = FusedElementwiseSource(program, DT_FLOAT, l);
//   // launch kFusedElementwiseKernelName(in..., out, FusedElementwiseArgs)
//
// The source is one extern "C" kernel, one thread per output element in a
// grid-stride loop; values are loaded into float (double for float64)
// registers, 16-bit floats converted with PTX / bit operations so it needs
// no header. Stateless functions; thread-safe.
#ifndef SLUICE_KERNELS_FUSED_ELEMENTWISE_SOURCE_H_
#define SLUICE_KERNELS_FUSED_ELEMENTWISE_SOURCE_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/dtype.h"
#include "core/shape.h"
#include "graph/elementwise_program.h"

namespace sluice {

// How a kernel reads one input for an output element.
enum class FusedInputAccess {
  kFlat,     // the output's shape: element i
  kScalar,   // one element, splat
  kStrided,  // broadcast: offset from the merged index and strides
};

struct FusedElementwiseLayout {
  int64_t num_elements = 0;  // of the output
  int rank = 0;              // merged dimensions
  std::array<int64_t, kMaxRank> dims{};
  std::vector<std::array<int64_t, kMaxRank>> strides;  // per input
  std::vector<FusedInputAccess> access;                // per input

  // The broadcast class: merged rank, each input's access and the index
  // width: "r2_fsx_i32" (flat, scalar, strided). Programs of one class and
  // dtype share a compiled kernel.
  std::string ClassKey() const;
  bool wide_index() const { return num_elements > INT32_MAX; }
};

// The layout of `inputs` (fully defined shapes) broadcast to `out`, their
// broadcast. REQUIRES: out is the broadcast of the inputs.
FusedElementwiseLayout LayoutFusedElementwise(
    const Shape& out, const std::vector<const Shape*>& inputs);

// Most merged dimensions the generated kernel indexes (the GPU kernels'
// limit, kernels/cuda/launch_types.h).
inline constexpr int kFusedElementwiseMaxGpuRank = 8;

// The generated kernel's last argument, by value. Its layout is the one
// the source declares.
struct FusedElementwiseArgs {
  long long n = 0;  // NOLINT(runtime/int): the CUDA source's type
  long long dims[kFusedElementwiseMaxGpuRank] = {};  // NOLINT
  long long strides[kMaxElementwiseInputs][kFusedElementwiseMaxGpuRank] =
      {};  // NOLINT
};

// The args for `layout`. REQUIRES: layout.rank <= kFusedElementwiseMaxGpuRank.
FusedElementwiseArgs MakeFusedElementwiseArgs(
    const FusedElementwiseLayout& layout);

inline constexpr char kFusedElementwiseKernelName[] =
    "sluice_fused_elementwise";

// CUDA C++ for `program` on `dtype` (float32, float64, float16, bfloat16)
// and layout's class: kernel kFusedElementwiseKernelName(const T* in0, ...,
// T* out, FusedElementwiseArgs args). INVALID_ARGUMENT for another dtype
// or a merged rank above kFusedElementwiseMaxGpuRank.
absl::StatusOr<std::string> FusedElementwiseSource(
    const ElementwiseProgram& program, DataType dtype,
    const FusedElementwiseLayout& layout);

}  // namespace sluice

#endif  // SLUICE_KERNELS_FUSED_ELEMENTWISE_SOURCE_H_
