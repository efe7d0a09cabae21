// RETURN_IF_ERROR and ASSIGN_OR_RETURN: sluice's own short names for the
// public SLUICE_RETURN_IF_ERROR and SLUICE_ASSIGN_OR_RETURN (sluice/status.h),
// which Abseil 20220623 lacks; and Invalid, short for
// absl::InvalidArgumentError (the error of most input checks). Not
// installed: a library's users get only the prefixed names.
//
//   RETURN_IF_ERROR(graph.Validate());
//   ASSIGN_OR_RETURN(auto tensor, ReadNpy(path));
//   if (rank < 0) return Invalid("negative rank");
//
// Stateless macros; thread-safe as the expressions they wrap.
#ifndef SLUICE_CORE_STATUS_MACROS_H_
#define SLUICE_CORE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "sluice/status.h"  // IWYU pragma: export

#define RETURN_IF_ERROR(expr) SLUICE_RETURN_IF_ERROR(expr)
#define ASSIGN_OR_RETURN(lhs, expr) SLUICE_ASSIGN_OR_RETURN(lhs, expr)

namespace sluice {

inline absl::Status Invalid(absl::string_view message) {
  return absl::InvalidArgumentError(message);
}

}  // namespace sluice

#endif  // SLUICE_CORE_STATUS_MACROS_H_
