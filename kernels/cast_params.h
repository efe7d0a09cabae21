// The attributes of Cast, parsed once for the CPU and CUDA kernels: SrcT,
// DstT, and ONNX's `saturate` (default true) and `round_mode` ("up",
// "down" or "nearest"; default "up"), which only matter for the float8
// destinations (round_mode only for float8 E8M0).
//
//   ASSIGN_OR_RETURN(CastAttrs a, ParseCastAttrs(node));
//   uint8_t b = EncodeE8M0(v, a.saturate, a.round);
//
// Value type and pure function; thread-safe.
#ifndef SLUICE_KERNELS_CAST_PARAMS_H_
#define SLUICE_KERNELS_CAST_PARAMS_H_

#include "absl/status/statusor.h"
#include "core/dtype.h"
#include "graph/graph.h"

namespace sluice {

struct CastAttrs {
  DataType src = DT_INVALID;
  DataType dst = DT_INVALID;
  bool saturate = true;
  E8M0Rounding round = E8M0Rounding::kUp;
};

// INVALID_ARGUMENT for a missing SrcT / DstT or an unknown round_mode.
absl::StatusOr<CastAttrs> ParseCastAttrs(const Node& node);

}  // namespace sluice

#endif  // SLUICE_KERNELS_CAST_PARAMS_H_
