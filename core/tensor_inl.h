// Template definitions for tensor.h. Not to be included directly.
#ifndef SLUICE_CORE_TENSOR_INL_H_
#define SLUICE_CORE_TENSOR_INL_H_

#include <cstdlib>
#include <cstring>
#include <vector>

namespace sluice {

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

#endif  // SLUICE_CORE_TENSOR_INL_H_
