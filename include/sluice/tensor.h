// Tensor: a dtype, a fully defined shape, and a reference-counted buffer in
// some allocator's memory. Copying a Tensor shares the buffer.
//
//   SLUICE_ASSIGN_OR_RETURN(Tensor t, Tensor::Create(DT_FLOAT, Shape({2, 3})));
//   absl::Span<float> v = t.flat<float>();   // host tensors only
//   Tensor r = t.Reshaped(Shape({3, 2}));    // same buffer
//
// A Tensor is thread-compatible; the buffer it shares is freed when the last
// Tensor referring to it goes away, from whichever thread that is.
#ifndef SLUICE_TENSOR_H_
#define SLUICE_TENSOR_H_

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sluice/allocator.h"
#include "sluice/dtype.h"
#include "sluice/shape.h"

namespace sluice {

// Bytes owned by an allocator. Freed on destruction.
class Buffer {
 public:
  Buffer(Allocator* allocator, void* data, size_t bytes)
      : allocator_(allocator), data_(data), bytes_(bytes) {}
  ~Buffer() { allocator_->Deallocate(data_, bytes_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Allocator* allocator() const { return allocator_; }

 private:
  Allocator* const allocator_;  // not owned; must outlive the buffer
  void* const data_;
  const size_t bytes_;
};

class Tensor {
 public:
  Tensor() = default;  // invalid: no dtype, no buffer

  // Allocates a tensor; its contents are uninitialised. Errors: the shape is
  // not fully defined or too large, the dtype is invalid, or allocation fails.
  static absl::StatusOr<Tensor> Create(DataType dtype, const Shape& shape,
                                       Allocator* allocator = CpuAllocator());
  // Like Create, zero-filled (host allocators only).
  static absl::StatusOr<Tensor> Zeros(DataType dtype, const Shape& shape);
  // A tensor over an existing buffer (memory not from Allocate, such as a
  // mapped file, whose allocator's Deallocate releases it). Errors: as
  // Create, or a buffer smaller than the tensor.
  static absl::StatusOr<Tensor> FromBuffer(DataType dtype, const Shape& shape,
                                           std::shared_ptr<Buffer> buffer);

  // Convenience for code and tests with small, known shapes on the host.
  // CHECK-fails on error: never use with sizes that come from user input.
  template <typename T>
  static Tensor FromVector(const std::vector<T>& values, const Shape& shape);
  template <typename T>
  static Tensor Scalar(T value) { return FromVector<T>({value}, Shape()); }

  bool valid() const { return dtype_ != DT_INVALID; }
  DataType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return shape_.rank(); }
  int64_t dim(int i) const { return shape_.dim(i); }
  int64_t NumElements() const { return num_elements_; }
  size_t bytes() const { return num_elements_ * DataTypeSize(dtype_); }
  bool on_host() const {
    return buffer_ == nullptr || buffer_->allocator()->host_accessible();
  }
  Allocator* allocator() const {
    return buffer_ ? buffer_->allocator() : nullptr;
  }
  const std::shared_ptr<Buffer>& buffer() const { return buffer_; }

  void* raw_data() const { return buffer_ ? buffer_->data() : nullptr; }
  template <typename T>
  T* data() const { return static_cast<T*>(raw_data()); }
  // REQUIRES: on_host() and CppToDataType<T>() == dtype().
  template <typename T>
  absl::Span<T> flat() const {
    return absl::Span<T>(data<T>(), static_cast<size_t>(num_elements_));
  }

  // The same buffer with another shape of the same element count.
  // REQUIRES: new_shape.num_elements() == NumElements().
  Tensor Reshaped(const Shape& new_shape) const;

  // "float32[2,3] {1, 2, 3, 4, 5, 6}", with at most `max_values` values
  // (host tensors only; device tensors print no values).
  std::string DebugString(int max_values = 8) const;

 private:
  DataType dtype_ = DT_INVALID;
  Shape shape_;
  int64_t num_elements_ = 0;
  std::shared_ptr<Buffer> buffer_;
};

// Whether two host tensors have the same dtype, shape and bytes.
bool TensorsEqual(const Tensor& a, const Tensor& b);

template <typename T>
Tensor Tensor::FromVector(const std::vector<T>& values, const Shape& shape) {
  absl::StatusOr<Tensor> t = Create(CppToDataType<T>(), shape);
  if (!t.ok() || t->NumElements() != static_cast<int64_t>(values.size())) {
    std::abort();  // programmer error: see the REQUIRES in tensor.h
  }
  T* out = t->template data<T>();
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return *std::move(t);
}

}  // namespace sluice

#endif  // SLUICE_TENSOR_H_
