// Allocator and CpuAllocator: public, in sluice/allocator.h.
#ifndef SLUICE_CORE_ALLOCATOR_H_
#define SLUICE_CORE_ALLOCATOR_H_

#include "sluice/allocator.h"  // IWYU pragma: export

#endif  // SLUICE_CORE_ALLOCATOR_H_
