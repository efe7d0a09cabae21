// StatusError: an absl::Status on its way to Python. Binding code throws it
// (ThrowIfError, ValueOrThrow); a translator registered on the module turns
// it into the Python exception class sluice.errors picks for the code
// (sluice.InvalidArgumentError, ...), carrying the message and the code.
//
//   Tensor t = ValueOrThrow(Tensor::Create(DT_FLOAT, shape));
//   ThrowIfError(ValidateRuntimeConfig(config));
//
// Thread-safe: throwing needs no GIL; the translator runs with it held.
#ifndef SLUICE_PYTHON_SRC_STATUS_ERROR_H_
#define SLUICE_PYTHON_SRC_STATUS_ERROR_H_

#include <exception>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nanobind/nanobind.h"

namespace sluice::python {

class StatusError : public std::exception {
 public:
  explicit StatusError(absl::Status status) : status_(std::move(status)) {}
  const absl::Status& status() const { return status_; }
  const char* what() const noexcept override { return "sluice status error"; }

 private:
  absl::Status status_;
};

// REQUIRES: nothing; does nothing for OK.
inline void ThrowIfError(const absl::Status& status) {
  if (!status.ok()) throw StatusError(status);
}

template <typename T>
T ValueOrThrow(absl::StatusOr<T> value) {
  if (!value.ok()) throw StatusError(std::move(value).status());
  return *std::move(value);
}

// Registers the translator and `_set_error_factory(callable)`: Python gives
// a callable (code: int, message: str) -> exception instance at import.
void RegisterStatusErrors(nanobind::module_& m);

}  // namespace sluice::python

#endif  // SLUICE_PYTHON_SRC_STATUS_ERROR_H_
