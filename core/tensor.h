// Tensor and Buffer: public, in sluice/tensor.h. core/dtype.h comes first so
// that sluice's own code also gets the float16 and bfloat16 C++ types.
#ifndef SLUICE_CORE_TENSOR_H_
#define SLUICE_CORE_TENSOR_H_

#include "core/allocator.h"
#include "core/dtype.h"
#include "core/shape.h"
#include "sluice/tensor.h"  // IWYU pragma: export

#endif  // SLUICE_CORE_TENSOR_H_
