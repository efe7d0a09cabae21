#include "python/src/ndarray_tensor.h"

// NumPy's C API makes result arrays directly (PyArray_SimpleNewFromData):
// nanobind's own export goes through numpy.array(...) from Python, about 8 us
// a call, which the 5 us overhead target has no room for.
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL sluice_numpy_api
#include "numpy/arrayobject.h"

#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "python/src/status_error.h"
#include "sluice/allocator.h"

namespace nb = nanobind;

namespace sluice::python {
namespace {

using nb::dlpack::dtype_code;

constexpr int kDlpackCpu = 1;

// Memory owned by a Python object: never allocates, frees nothing (the
// Buffer's deleter releases the object instead).
class BorrowedAllocator final : public Allocator {
 public:
  std::string Name() const override { return "python"; }
  bool host_accessible() const override { return true; }
  absl::StatusOr<void*> Allocate(size_t bytes) override {
    return absl::InternalError("the Python memory allocator allocates nothing");
  }
  void Deallocate(void* ptr, size_t bytes) override {}
};

Allocator* Borrowed() {
  static Allocator* const kAllocator = new BorrowedAllocator();
  return kAllocator;
}

// The NumPy type number of a sluice dtype: its own, or the unsigned integer
// of the same width for dtypes NumPy lacks. `native` says which.
int NumpyType(DataType dtype, bool* native) {
  *native = true;
  switch (dtype) {
    case DT_FLOAT: return NPY_FLOAT32;
    case DT_DOUBLE: return NPY_FLOAT64;
    case DT_FLOAT16: return NPY_FLOAT16;
    case DT_INT8: return NPY_INT8;
    case DT_INT16: return NPY_INT16;
    case DT_INT32: return NPY_INT32;
    case DT_INT64: return NPY_INT64;
    case DT_UINT8: return NPY_UINT8;
    case DT_UINT16: return NPY_UINT16;
    case DT_UINT32: return NPY_UINT32;
    case DT_UINT64: return NPY_UINT64;
    case DT_BOOL: return NPY_BOOL;
    default:
      *native = false;
      return DataTypeSize(dtype) == 2 ? NPY_UINT16 : NPY_UINT8;
  }
}

}  // namespace

DataType DataTypeFromDlpack(nb::dlpack::dtype dtype) {
  if (dtype.lanes != 1) return DT_INVALID;
  switch (static_cast<dtype_code>(dtype.code)) {
    case dtype_code::Float:
      if (dtype.bits == 16) return DT_FLOAT16;
      if (dtype.bits == 32) return DT_FLOAT;
      if (dtype.bits == 64) return DT_DOUBLE;
      break;
    case dtype_code::Bfloat:
      if (dtype.bits == 16) return DT_BFLOAT16;
      break;
    case dtype_code::Int:
      if (dtype.bits == 8) return DT_INT8;
      if (dtype.bits == 16) return DT_INT16;
      if (dtype.bits == 32) return DT_INT32;
      if (dtype.bits == 64) return DT_INT64;
      break;
    case dtype_code::UInt:
      if (dtype.bits == 8) return DT_UINT8;
      if (dtype.bits == 16) return DT_UINT16;
      if (dtype.bits == 32) return DT_UINT32;
      if (dtype.bits == 64) return DT_UINT64;
      break;
    case dtype_code::Bool:
      if (dtype.bits == 8) return DT_BOOL;
      break;
    default:
      break;
  }
  return DT_INVALID;
}

bool CanBorrow(const nb::ndarray<nb::ro>& array) {
  if (array.device_type() != kDlpackCpu) return true;  // refused later
  const size_t item = (array.dtype().bits + 7) / 8;
  if (item == 0 ||
      reinterpret_cast<uintptr_t>(array.data()) % item != 0) {
    return false;
  }
  if (array.stride_ptr() == nullptr) return true;
  int64_t expected = 1;
  for (size_t i = array.ndim(); i-- > 0;) {
    if (array.shape(i) != 1 && array.stride(i) != expected) return false;
    expected *= static_cast<int64_t>(array.shape(i));
  }
  return true;
}

absl::StatusOr<Tensor> BorrowNdarray(const nb::ndarray<nb::ro>& array,
                                     DataType dtype) {
  const DataType own = DataTypeFromDlpack(array.dtype());
  if (dtype == DT_INVALID) dtype = own;
  if (dtype == DT_INVALID) {
    return absl::InvalidArgumentError(absl::StrCat(
        "an array of DLPack dtype (code ", array.dtype().code, ", ",
        array.dtype().bits, " bits, ", array.dtype().lanes,
        " lanes) has no sluice dtype"));
  }
  if (8 * DataTypeSize(dtype) != array.dtype().bits) {
    return absl::InvalidArgumentError(absl::StrCat(
        "an array of ", array.dtype().bits, "-bit elements cannot be read as ",
        DataTypeName(dtype)));
  }
  if (array.device_type() != kDlpackCpu) {
    return absl::UnimplementedError(absl::StrCat(
        "an array in device memory (DLPack device type ", array.device_type(),
        "): this version of sluice takes feeds in host memory; copy it to the "
        "CPU first (e.g. tensor.cpu())"));
  }
  DimVector dims;
  for (size_t i = 0; i < array.ndim(); ++i) {
    dims.push_back(static_cast<int64_t>(array.shape(i)));
  }
  const Shape shape{absl::Span<const int64_t>(dims)};
  if (array.size() == 0) return Tensor::Create(dtype, shape);
  // The Buffer's deleter keeps a reference to the array and drops it with
  // the GIL held, on whichever thread the last Tensor goes away.
  auto* owner = new nb::ndarray<nb::ro>(array);
  std::shared_ptr<Buffer> buffer(
      new Buffer(Borrowed(), const_cast<void*>(array.data()), array.nbytes()),
      [owner](Buffer* b) {
        delete b;
        if (!Py_IsInitialized()) return;  // interpreter gone: leak it
        nb::gil_scoped_acquire gil;
        delete owner;
      });
  return Tensor::FromBuffer(dtype, shape, std::move(buffer));
}

bool InitNumpy() { return _import_array() >= 0; }

nb::object TensorToNumpy(const Tensor& tensor, std::string* view_dtype) {
  bool native = true;
  const int type = NumpyType(tensor.dtype(), &native);
  if (native) {
    view_dtype->clear();
  } else {
    *view_dtype = DataTypeName(tensor.dtype());
  }
  // Hand the buffer over when nothing else holds it; otherwise copy.
  Tensor owned = tensor;
  if (tensor.buffer() != nullptr && tensor.buffer().use_count() > 2) {
    Tensor copy = ValueOrThrow(Tensor::Create(tensor.dtype(), tensor.shape()));
    std::memcpy(copy.raw_data(), tensor.raw_data(), tensor.bytes());
    owned = std::move(copy);
  }
  npy_intp dims[kMaxRank];
  for (int i = 0; i < tensor.rank(); ++i) dims[i] = tensor.dim(i);
  auto* keep = new Tensor(std::move(owned));
  nb::capsule capsule(keep, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  PyObject* array = PyArray_SimpleNewFromData(tensor.rank(), dims, type,
                                              keep->raw_data());
  if (array == nullptr) throw nb::python_error();
  // The array owns the capsule (SetBaseObject steals the reference), and
  // through it the Tensor.
  if (PyArray_SetBaseObject(reinterpret_cast<PyArrayObject*>(array),
                            capsule.release().ptr()) < 0) {
    Py_DECREF(array);
    throw nb::python_error();
  }
  return nb::steal(array);
}

}  // namespace sluice::python
