// ReadNpy, WriteNpy and the rest of .npy I/O: public, in sluice/npy.h.
#ifndef SLUICE_CORE_NPY_H_
#define SLUICE_CORE_NPY_H_

#include "core/tensor.h"
#include "sluice/npy.h"  // IWYU pragma: export

#endif  // SLUICE_CORE_NPY_H_
