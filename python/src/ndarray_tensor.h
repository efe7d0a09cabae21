// Conversions between nanobind ndarrays (NumPy arrays, and any object with
// __dlpack__) and sluice Tensors, without copying where the memory allows.
//
//   nb::ndarray<nb::ro> a = ...;                 // a feed from Python
//   absl::StatusOr<Tensor> t = BorrowNdarray(a, DT_INVALID);
//   nb::object out = TensorToNumpy(result, &dtype_name);
//
// Copies: a C-contiguous, element-aligned array in host memory is borrowed
// (the Tensor keeps the array alive; nothing is copied). Anything else is
// refused here (the caller makes a contiguous copy first). A result is
// handed to NumPy without a copy when nothing else holds its buffer, and
// copied otherwise (a constant of the graph, a fed array passed through, the
// same value fetched twice), so NumPy never aliases memory sluice or the
// caller still uses.
//
// Call with the GIL held. A borrowed Tensor may be destroyed on any thread:
// it takes the GIL to release the array.
#ifndef SLUICE_PYTHON_SRC_NDARRAY_TENSOR_H_
#define SLUICE_PYTHON_SRC_NDARRAY_TENSOR_H_

#include <string>

#include "absl/status/statusor.h"
#include "nanobind/nanobind.h"
#include "nanobind/ndarray.h"
#include "sluice/dtype.h"
#include "sluice/tensor.h"

namespace sluice::python {

// The sluice dtype of a DLPack dtype; DT_INVALID when there is none.
DataType DataTypeFromDlpack(nanobind::dlpack::dtype dtype);

// Whether `array` can be borrowed as it is: host memory, C-contiguous,
// aligned to its element size.
bool CanBorrow(const nanobind::ndarray<nanobind::ro>& array);

// OK for a DLPack device sluice takes feeds from (kDLCPU, kDLCUDAHost:
// host memory; kDLCUDA: a GPU's), INVALID_ARGUMENT naming it otherwise.
absl::Status CheckDlpackDevice(int device_type, int device_id);

// A Tensor over the array's memory. `dtype` DT_INVALID takes the array's
// dtype; another dtype reinterprets the bytes (ml_dtypes arrays arrive as
// unsigned integers of the same width), which must then have the same size.
// An array in CUDA memory becomes external GPU memory
// (sluice/external_memory.h) on `gpu_device`, the session's name of its GPU
// ("/gpu:0"; empty: the session does not use that GPU), with no copy; it
// must be C-contiguous. Errors: INVALID_ARGUMENT for a dtype sluice lacks,
// sizes that disagree, a rank above kMaxRank (NumPy allows 64), a DLPack
// device sluice does not take, or a CUDA
// array that is strided or on a GPU the session does not use. REQUIRES:
// CanBorrow(array) for host arrays.
absl::StatusOr<Tensor> BorrowNdarray(const nanobind::ndarray<nanobind::ro>& array,
                                     DataType dtype,
                                     const std::string& gpu_device = "");

// A result left in a GPU's memory, as Python sees it (sluice.DeviceArray:
// __dlpack__, __dlpack_device__, shape, dtype, data_ptr).
struct DeviceArray {
  // Declared first, so destroyed last: the tensor's memory goes back to
  // this session's allocator before the session may go.
  nanobind::object keep_alive;  // the Python session
  Tensor tensor;
  int cuda_device_id = 0;
};

// Throws (sluice's InvalidArgumentError) for a dtype DLPack lacks
// (float8, 4-/2-bit): such a result cannot stay on the GPU.
void CheckDlpackExportable(DataType dtype);

// A DLPack capsule (consumed once by its importer) over a tensor in the
// memory of CUDA device `cuda_device_id`, sharing it (the capsule keeps the
// Tensor alive). The tensor's GPU work
// must be finished (Session::Run synchronises before returning GPU
// fetches), so consumers on any stream may read it: __dlpack__ ignores its
// `stream` argument. `keep_alive` (the Python session) is kept as long as
// the object: the memory returns to that session's allocator. Throws for
// dtypes DLPack lacks (float8, 4-/2-bit).
nanobind::object TensorToDlpack(const Tensor& tensor, int cuda_device_id,
                                nanobind::handle keep_alive);

// Loads NumPy's C API; false (with a Python error set) when it fails. Call
// once, from the module's initialisation, before TensorToNumpy.
bool InitNumpy();

// A NumPy array of a host tensor (see the copy rule above), of any rank
// NumPy takes (a Python error past NumPy's 64). For dtypes NumPy
// lacks (bfloat16, float8, 4- and 2-bit types) the array holds the raw
// unsigned integers and `view_dtype` is set to the sluice dtype name, which
// the Python side views through ml_dtypes; otherwise it is cleared.
nanobind::object TensorToNumpy(const Tensor& tensor, std::string* view_dtype);

}  // namespace sluice::python

#endif  // SLUICE_PYTHON_SRC_NDARRAY_TENSOR_H_
