// RETURN_IF_ERROR and ASSIGN_OR_RETURN: sluice's own short names for the
// public SLUICE_RETURN_IF_ERROR and SLUICE_ASSIGN_OR_RETURN (sluice/status.h),
// which Abseil 20220623 lacks. Not installed: a library's users get only the
// prefixed names.
//
//   RETURN_IF_ERROR(graph.Validate());
//   ASSIGN_OR_RETURN(auto tensor, ReadNpy(path));
//
// Stateless macros; thread-safe as the expressions they wrap.
#ifndef SLUICE_CORE_STATUS_MACROS_H_
#define SLUICE_CORE_STATUS_MACROS_H_

#include "sluice/status.h"  // IWYU pragma: export

#define RETURN_IF_ERROR(expr) SLUICE_RETURN_IF_ERROR(expr)
#define ASSIGN_OR_RETURN(lhs, expr) SLUICE_ASSIGN_OR_RETURN(lhs, expr)

#endif  // SLUICE_CORE_STATUS_MACROS_H_
