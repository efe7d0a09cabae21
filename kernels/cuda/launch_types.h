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
  kInt16 = 10,
  kUInt16 = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kFloat8E4M3FN = 14,
  kFloat8E4M3FNUZ = 15,
  kFloat8E5M2 = 16,
  kFloat8E5M2FNUZ = 17,
  kFloat8E8M0 = 18,
  kFloat4E2M1 = 19,
  kInt4 = 20,  // the sub-byte types: one value per byte, as on the host
  kUInt4 = 21,
  kInt2 = 22,
  kUInt2 = 23,
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
