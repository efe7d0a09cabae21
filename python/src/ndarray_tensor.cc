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
#include "core/status_macros.h"
#include "python/src/status_error.h"
#include "sluice/allocator.h"
#include "sluice/external_memory.h"

namespace nb = nanobind;

namespace sluice::python {
namespace {

using nb::dlpack::dtype_code;

constexpr int kDlpackCpu = 1;
constexpr int kDlpackCuda = 2;
constexpr int kDlpackCudaHost = 3;  // pinned host memory

// Whether the host can read the array's memory as it is.
bool InHostMemory(int device_type) {
  return device_type == kDlpackCpu || device_type == kDlpackCudaHost;
}

// Whether the array is C-contiguous (size-1 dimensions may have any stride).
bool Compact(const nb::ndarray<nb::ro>& array) {
  if (array.stride_ptr() == nullptr) return true;
  int64_t expected = 1;
  for (size_t i = array.ndim(); i-- > 0;) {
    if (array.shape(i) != 1 && array.stride(i) != expected) return false;
    expected *= static_cast<int64_t>(array.shape(i));
  }
  return true;
}

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
  // DLPack 1.1's float8 codes (dlpack.h's DLDataTypeCode), which nanobind's
  // dtype_code does not name; NumPy 2.5 with ml_dtypes 0.7 exports float8
  // arrays with them.
  if (dtype.bits == 8) {
    switch (dtype.code) {
      case 10: return DT_FLOAT8_E4M3FN;    // kDLFloat8_e4m3fn
      case 11: return DT_FLOAT8_E4M3FNUZ;  // kDLFloat8_e4m3fnuz
      case 12: return DT_FLOAT8_E5M2;      // kDLFloat8_e5m2
      case 13: return DT_FLOAT8_E5M2FNUZ;  // kDLFloat8_e5m2fnuz
      case 14: return DT_FLOAT8_E8M0;      // kDLFloat8_e8m0fnu
      default: break;
    }
  }
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
  // Device memory is never copied here: BorrowNdarray takes it or says why.
  if (!InHostMemory(array.device_type())) return true;
  const size_t item = (array.dtype().bits + 7) / 8;
  if (item == 0 ||
      reinterpret_cast<uintptr_t>(array.data()) % item != 0) {
    return false;
  }
  return Compact(array);
}

static std::string DlpackDeviceName(int device_type) {
  switch (device_type) {
    case 1: return "kDLCPU";
    case 2: return "kDLCUDA";
    case 3: return "kDLCUDAHost";
    case 4: return "kDLOpenCL";
    case 7: return "kDLVulkan";
    case 8: return "kDLMetal";
    case 9: return "kDLVPI";
    case 10: return "kDLROCM";
    case 11: return "kDLROCMHost";
    case 13: return "kDLCUDAManaged";
    case 14: return "kDLOneAPI";
    default: return "unknown";
  }
}

absl::Status CheckDlpackDevice(int device_type, int device_id) {
  if (InHostMemory(device_type) || device_type == kDlpackCuda) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "a feed on DLPack device (", device_type, ", ", device_id, ") (",
      DlpackDeviceName(device_type),
      "): sluice takes host memory (kDLCPU, kDLCUDAHost) and CUDA GPU "
      "memory (kDLCUDA); copy it to the CPU or a CUDA GPU first"));
}

absl::StatusOr<Tensor> BorrowNdarray(const nb::ndarray<nb::ro>& array,
                                     DataType dtype,
                                     const std::string& gpu_device) {
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
  const int device_type = array.device_type();
  RETURN_IF_ERROR(CheckDlpackDevice(device_type, array.device_id()));
  if (device_type == kDlpackCuda) {
    if (gpu_device.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a feed on CUDA device ", array.device_id(),
          ", which this session does not use; copy it to the CPU or to a "
          "GPU the session runs on (Session.devices)"));
    }
    if (!Compact(array)) {
      return absl::InvalidArgumentError(
          "a feed in CUDA memory must be C-contiguous (strided GPU arrays "
          "are not copied on the host); make it contiguous first (e.g. "
          "tensor.contiguous())");
    }
    if (reinterpret_cast<uintptr_t>(array.data()) % DataTypeSize(dtype) != 0) {
      return absl::InvalidArgumentError(
          "a feed in CUDA memory is not aligned to its element size");
    }
  }
  if (array.ndim() > static_cast<size_t>(kMaxRank)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "an array of rank ", array.ndim(), ": sluice tensors have at most ",
        kMaxRank, " dimensions"));
  }
  DimVector dims;
  for (size_t i = 0; i < array.ndim(); ++i) {
    dims.push_back(static_cast<int64_t>(array.shape(i)));
  }
  const Shape shape{absl::Span<const int64_t>(dims)};
  if (array.size() == 0 && device_type != kDlpackCuda) {
    return Tensor::Create(dtype, shape);
  }
  // The Buffer's deleter (or the external memory's release) keeps a
  // reference to the array and drops it with the GIL held, on whichever
  // thread the last Tensor goes away.
  auto* owner = new nb::ndarray<nb::ro>(array);
  if (device_type == kDlpackCuda) {
    absl::StatusOr<Tensor> t = WrapExternalMemory(
        dtype, shape, const_cast<void*>(array.data()), gpu_device, [owner] {
          if (!Py_IsInitialized()) return;  // interpreter gone: leak it
          nb::gil_scoped_acquire gil;
          delete owner;
        });
    if (!t.ok()) delete owner;  // the release does not run on error
    return t;
  }
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
  // Any rank a graph makes (a Reshape may exceed kMaxRank); NumPy refuses
  // more than its own limit with a Python error.
  const DimVector& shape = tensor.shape().dims();
  std::vector<npy_intp> dims(shape.begin(), shape.end());
  auto* keep = new Tensor(std::move(owned));
  nb::capsule capsule(keep, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  PyObject* array = PyArray_SimpleNewFromData(tensor.rank(), dims.data(), type,
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

static absl::StatusOr<nb::dlpack::dtype> DlpackDataType(DataType dtype) {
  using nb::dlpack::dtype_code;
  auto make = [](dtype_code code, int bits) {
    nb::dlpack::dtype d;
    d.code = static_cast<uint8_t>(code);
    d.bits = static_cast<uint8_t>(bits);
    d.lanes = 1;
    return d;
  };
  switch (dtype) {
    case DT_FLOAT16: return make(dtype_code::Float, 16);
    case DT_FLOAT: return make(dtype_code::Float, 32);
    case DT_DOUBLE: return make(dtype_code::Float, 64);
    case DT_BFLOAT16: return make(dtype_code::Bfloat, 16);
    case DT_INT8: return make(dtype_code::Int, 8);
    case DT_INT16: return make(dtype_code::Int, 16);
    case DT_INT32: return make(dtype_code::Int, 32);
    case DT_INT64: return make(dtype_code::Int, 64);
    case DT_UINT8: return make(dtype_code::UInt, 8);
    case DT_UINT16: return make(dtype_code::UInt, 16);
    case DT_UINT32: return make(dtype_code::UInt, 32);
    case DT_UINT64: return make(dtype_code::UInt, 64);
    case DT_BOOL: return make(dtype_code::Bool, 8);
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "a ", DataTypeName(dtype),
          " result has no DLPack dtype, so it cannot stay on the GPU; fetch "
          "it to the host (output_device='cpu')"));
  }
}

void CheckDlpackExportable(DataType dtype) {
  ValueOrThrow(DlpackDataType(dtype));
}

nb::object TensorToDlpack(const Tensor& tensor, int cuda_device_id,
                          nb::handle keep_alive) {
  const nb::dlpack::dtype dtype = ValueOrThrow(DlpackDataType(tensor.dtype()));
  const DimVector& shape = tensor.shape().dims();
  std::vector<size_t> dims(shape.begin(), shape.end());
  // The capsule holds the Tensor and, after it (members go in reverse), the
  // object whose allocator the memory returns to. It is destroyed by
  // Python, with the GIL held.
  struct Owner {
    nb::object keep_alive;
    Tensor tensor;
  };
  auto* keep = new Owner{nb::borrow(keep_alive), tensor};
  nb::capsule owner(keep, [](void* p) noexcept {
    delete static_cast<Owner*>(p);
  });
  nb::ndarray<> array(keep->tensor.raw_data(), tensor.rank(), dims.data(), owner,
                      /*strides=*/nullptr, dtype, kDlpackCuda, cuda_device_id);
  return nb::cast(std::move(array));
}

}  // namespace sluice::python
