// RETURN_IF_ERROR and ASSIGN_OR_RETURN, which Abseil 20220623 lacks.
//
//   RETURN_IF_ERROR(graph.Validate());
//   ASSIGN_OR_RETURN(auto tensor, ReadNpy(path));
//
// Stateless macros; thread-safe as the expressions they wrap.
#ifndef SLUICE_CORE_STATUS_MACROS_H_
#define SLUICE_CORE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define SLUICE_CONCAT_INNER_(a, b) a##b
#define SLUICE_CONCAT_(a, b) SLUICE_CONCAT_INNER_(a, b)

#define RETURN_IF_ERROR(expr)                          \
  do {                                                 \
    ::absl::Status sluice_status_ = (expr);            \
    if (!sluice_status_.ok()) return sluice_status_;   \
  } while (0)

#define ASSIGN_OR_RETURN(lhs, expr) \
  SLUICE_ASSIGN_OR_RETURN_IMPL_(SLUICE_CONCAT_(sluice_statusor_, __LINE__), lhs, expr)

#define SLUICE_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                  \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = std::move(statusor).value()

#endif  // SLUICE_CORE_STATUS_MACROS_H_
