// External memory: a Tensor over bytes sluice did not allocate, on the host
// or in a GPU's memory (a PyTorch or CuPy tensor seen through DLPack, a
// buffer of another CUDA library). Nothing is copied: the Tensor reads and
// writes the caller's memory, and `release` runs once the last Tensor
// sharing it is gone, so the memory's owner can be kept alive until then.
//
//   float* d = ...;  // 1024 floats the caller wrote with cudaMemcpy
//   SLUICE_ASSIGN_OR_RETURN(
//       Tensor x, WrapExternalMemory(DT_FLOAT, Shape({1024}), d, "/gpu:0",
//                                    [owner] { owner->Unref(); }));
//   SLUICE_ASSIGN_OR_RETURN(auto out, session->Run({{"x", x}}, {"y"}));
//
// Thread-safe; `release` may run on any thread.
#ifndef SLUICE_EXTERNAL_MEMORY_H_
#define SLUICE_EXTERNAL_MEMORY_H_

#include <functional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "sluice/tensor.h"

namespace sluice {

// A Tensor of `dtype` and `shape` over the compact (C-order) bytes at
// `data`, which live on `device`: "/cpu:0" (host memory, pinned or not) or
// "/gpu:N", a GPU as a session names it (N is the session's logical GPU,
// the CUDA ordinal unless the config splits GPUs). `release` (may be
// empty) runs when the last Tensor sharing the memory goes away. The caller
// guarantees that the memory holds at least shape.num_elements() elements,
// is aligned to the element size, and stays valid until `release` runs.
// Errors: INVALID_ARGUMENT for a null `data` with elements, a device name
// that does not parse or is not a single device, a shape not fully
// defined, an invalid dtype; `release` is not called on error.
absl::StatusOr<Tensor> WrapExternalMemory(DataType dtype, const Shape& shape,
                                          void* data, std::string_view device,
                                          std::function<void()> release = {});

// The device name ("/cpu:0", "/gpu:1") of a tensor made by
// WrapExternalMemory; empty for any other tensor.
std::string ExternalMemoryDevice(const Tensor& tensor);

}  // namespace sluice

#endif  // SLUICE_EXTERNAL_MEMORY_H_
