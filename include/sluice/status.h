// Errors are values: every sluice function that can fail returns an
// absl::Status or absl::StatusOr<T>, with the most specific canonical code and
// a message naming the file, node, op or feed. These two macros propagate
// them (Abseil 20220623 has none):
//
//   SLUICE_RETURN_IF_ERROR(session->Run(feeds).status());
//   SLUICE_ASSIGN_OR_RETURN(sluice::Tensor x, sluice::ReadNpy("x.npy"));
//
// Both return from the enclosing function, which must return absl::Status or
// absl::StatusOr<U>. Stateless; thread-safe as the expressions they wrap.
#ifndef SLUICE_STATUS_H_
#define SLUICE_STATUS_H_

#include <utility>

#include "absl/status/status.h"    // IWYU pragma: export
#include "absl/status/statusor.h"  // IWYU pragma: export

#define SLUICE_CONCAT_INNER_(a, b) a##b
#define SLUICE_CONCAT_(a, b) SLUICE_CONCAT_INNER_(a, b)

// Evaluates `expr` (an absl::Status) and returns it when it is not OK.
#define SLUICE_RETURN_IF_ERROR(expr)                  \
  do {                                                \
    ::absl::Status sluice_status_ = (expr);           \
    if (!sluice_status_.ok()) return sluice_status_;  \
  } while (0)

// Evaluates `expr` (an absl::StatusOr<T>); returns its status when it is not
// OK, else moves its value into `lhs` (a declaration such as `auto x` or an
// existing variable). Expands to several statements: do not use it as the
// body of an unbraced if or loop.
#define SLUICE_ASSIGN_OR_RETURN(lhs, expr)                                  \
  SLUICE_ASSIGN_OR_RETURN_IMPL_(SLUICE_CONCAT_(sluice_statusor_, __LINE__), \
                                lhs, expr)

#define SLUICE_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                  \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = std::move(statusor).value()

#endif  // SLUICE_STATUS_H_
