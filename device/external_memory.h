// WrapExternalMemory and ExternalMemoryDevice: public, in
// sluice/external_memory.h.
#ifndef SLUICE_DEVICE_EXTERNAL_MEMORY_H_
#define SLUICE_DEVICE_EXTERNAL_MEMORY_H_

#include "sluice/external_memory.h"  // IWYU pragma: export

#endif  // SLUICE_DEVICE_EXTERNAL_MEMORY_H_
