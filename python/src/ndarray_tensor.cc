#include "python/src/ndarray_tensor.h"

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

// The DLPack dtype NumPy shows for a sluice dtype: its own, or the unsigned
// integer of the same width for dtypes NumPy lacks. `native` says which.
nb::dlpack::dtype ToDlpack(DataType dtype, bool* native) {
  *native = true;
  const uint8_t bits = static_cast<uint8_t>(8 * DataTypeSize(dtype));
  switch (dtype) {
    case DT_FLOAT: case DT_DOUBLE: case DT_FLOAT16:
      return {static_cast<uint8_t>(dtype_code::Float), bits, 1};
    case DT_INT8: case DT_INT16: case DT_INT32: case DT_INT64:
      return {static_cast<uint8_t>(dtype_code::Int), bits, 1};
    case DT_UINT8: case DT_UINT16: case DT_UINT32: case DT_UINT64:
      return {static_cast<uint8_t>(dtype_code::UInt), bits, 1};
    case DT_BOOL:
      return {static_cast<uint8_t>(dtype_code::Bool), 8, 1};
    default:
      *native = false;
      return {static_cast<uint8_t>(dtype_code::UInt), bits, 1};
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

nb::object TensorToNumpy(const Tensor& tensor, std::string* view_dtype) {
  bool native = true;
  const nb::dlpack::dtype dl = ToDlpack(tensor.dtype(), &native);
  if (native) {
    view_dtype->clear();
  } else {
    *view_dtype = DataTypeName(tensor.dtype());
  }
  // Hand the buffer over when nothing else holds it; otherwise copy.
  Tensor owned = tensor;
  if (tensor.buffer() != nullptr && tensor.buffer().use_count() > 1) {
    Tensor copy = ValueOrThrow(Tensor::Create(tensor.dtype(), tensor.shape()));
    std::memcpy(copy.raw_data(), tensor.raw_data(), tensor.bytes());
    owned = std::move(copy);
  }
  std::vector<size_t> shape(tensor.shape().dims().begin(),
                            tensor.shape().dims().end());
  auto* keep = new Tensor(std::move(owned));
  nb::capsule capsule(keep, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  nb::ndarray<nb::numpy> array(keep->raw_data(), shape.size(), shape.data(),
                               capsule, nullptr, dl);
  return array.cast();
}

}  // namespace sluice::python
