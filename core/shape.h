// Shape, kUnknownDim, ShapeFromProto: public, in sluice/shape.h.
#ifndef SLUICE_CORE_SHAPE_H_
#define SLUICE_CORE_SHAPE_H_

#include "sluice/shape.h"  // IWYU pragma: export

#endif  // SLUICE_CORE_SHAPE_H_
