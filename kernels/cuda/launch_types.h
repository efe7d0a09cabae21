// Plain types shared by the CUDA launchers (kernels/cuda/*.cu) and the
// OpKernels that call them: a dtype enum with the numbering of
// proto/types.proto (the .cu files do not include protobuf headers), and an
// index map that walks an N-d iteration space with up to three operands'
// element strides (0 where an operand broadcasts).
//
//   IndexMap m;  // out [2,3] from a [2,1] and b [3]
//   m.rank = 2; m.dims = {2, 3}; m.strides[0] = {1, 0}; m.strides[1] = {0, 1};
//
// Value types; thread-compatible.
#ifndef SLUICE_KERNELS_CUDA_LAUNCH_TYPES_H_
#define SLUICE_KERNELS_CUDA_LAUNCH_TYPES_H_

#include <cstdint>

namespace sluice::cuda {

inline constexpr int kMaxGpuDims = 8;

// Same values as sluice::DataType (static_asserts in cuda_kernel_util.cc).
enum class GpuDtype : int {
  kFloat = 1,
  kHalf = 2,
  kBFloat16 = 3,
  kDouble = 4,
  kInt8 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kUInt8 = 8,
  kBool = 9,
};

struct IndexMap {
  int rank = 0;
  int64_t dims[kMaxGpuDims] = {};
  // strides[i][d]: elements operand i moves per step along dimension d.
  int64_t strides[3][kMaxGpuDims] = {};
  int64_t num_elements = 0;
};

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_LAUNCH_TYPES_H_
