#include "core/tensor.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace sluice {

absl::StatusOr<Tensor> Tensor::Create(DataType dtype, const Shape& shape,
                                      Allocator* allocator) {
  if (DataTypeSize(dtype) == 0) {
    return absl::InvalidArgumentError("cannot create a tensor of invalid dtype");
  }
  ASSIGN_OR_RETURN(int64_t n, shape.NumElements());
  size_t bytes = static_cast<size_t>(n) * DataTypeSize(dtype);
  ASSIGN_OR_RETURN(void* data, allocator->Allocate(bytes));
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.num_elements_ = n;
  t.buffer_ = std::make_shared<Buffer>(allocator, data, bytes);
  return t;
}

absl::StatusOr<Tensor> Tensor::FromBuffer(DataType dtype, const Shape& shape,
                                          std::shared_ptr<Buffer> buffer) {
  if (DataTypeSize(dtype) == 0) {
    return absl::InvalidArgumentError("cannot create a tensor of invalid dtype");
  }
  ASSIGN_OR_RETURN(int64_t n, shape.NumElements());
  const size_t bytes = static_cast<size_t>(n) * DataTypeSize(dtype);
  if (buffer == nullptr || buffer->bytes() < bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a buffer of ", buffer ? buffer->bytes() : 0, " bytes cannot hold ",
        DataTypeName(dtype), shape.DebugString(), " (", bytes, " bytes)"));
  }
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.num_elements_ = n;
  t.buffer_ = std::move(buffer);
  return t;
}

absl::StatusOr<Tensor> Tensor::Zeros(DataType dtype, const Shape& shape) {
  ASSIGN_OR_RETURN(Tensor t, Create(dtype, shape));
  if (t.bytes() > 0) std::memset(t.raw_data(), 0, t.bytes());
  return t;
}

Tensor Tensor::Reshaped(const Shape& new_shape) const {
  Tensor t = *this;
  t.shape_ = new_shape;
  return t;
}

namespace {

template <typename T>
void AppendValue(std::string* out, T v) {
  if constexpr (std::is_same_v<T, bool>) {
    absl::StrAppend(out, v ? "true" : "false");
  } else if constexpr (std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>) {
    absl::StrAppend(out, static_cast<int>(v));
  } else if constexpr (std::is_integral_v<T>) {
    absl::StrAppend(out, v);
  } else {
    absl::StrAppend(out, static_cast<double>(static_cast<float>(v)));
  }
}

}  // namespace

std::string Tensor::DebugString(int max_values) const {
  if (!valid()) return "<invalid tensor>";
  std::string out = absl::StrCat(DataTypeName(dtype_), shape_.DebugString());
  if (!on_host()) return absl::StrCat(out, " (on ", allocator()->Name(), ")");
  out += " {";
  int64_t n = std::min<int64_t>(num_elements_, max_values);
  SLUICE_SWITCH_DTYPE(dtype_, {
    const T* v = data<T>();
    for (int64_t i = 0; i < n; ++i) {
      if (i > 0) out += ", ";
      AppendValue<T>(&out, v[i]);
    }
  }, {});
  if (num_elements_ > n) out += ", ...";
  out += "}";
  return out;
}

bool TensorsEqual(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  if (a.bytes() == 0) return true;
  return std::memcmp(a.raw_data(), b.raw_data(), a.bytes()) == 0;
}

}  // namespace sluice
