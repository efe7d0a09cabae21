// Constants held where they are read: which values of Const nodes a device
// that reads them holds itself, from plan compilation on, instead of
// receiving a copy from the Const's device every step (docs/design.md
// decisions 54 and 61). PartitionGraph marks such transfers
// (Transfer::constant), CompilePlan makes them constant slots on the
// destination, and the stage planner does not count them as values
// crossing a cut.
//
//   if (HeldWhereRead(producer, bytes, src_is_cpu || dst_is_cpu)) ...
#ifndef SLUICE_PLACER_CONSTANTS_WHERE_READ_H_
#define SLUICE_PLACER_CONSTANTS_WHERE_READ_H_

#include <cstdint>

#include "graph/graph.h"

namespace sluice {

// A constant of at most this many bytes is held on every device of its
// process that reads it: a copy of it beside each reader costs less than
// a transfer each step (ViT-B/16's layers share a few constants of ones
// and zeros that common_subexpressions merged; cut between layers, each
// of them crossed every step). Larger constants read on two GPUs are still
// copied each step: a weight both read (tied embeddings) would otherwise
// be held twice, beyond what the placer counted.
inline constexpr int64_t kMaxConstantHeldWhereReadBytes = int64_t{64} << 10;

// Whether the value of `producer` (`bytes` of it), read on another device
// of the same process, is held there instead of copied each step: a Const
// with its value in host memory, of at most kMaxConstantHeldWhereReadBytes,
// or of any size where either end is host memory (a CPU device: a GPU
// kernel reading it in host memory takes the host value).
inline bool HeldWhereRead(const Node& producer, int64_t bytes,
                          bool host_memory_end) {
  if (!producer.is_const() || producer.const_value() == nullptr ||
      !producer.const_value()->on_host()) {
    return false;
  }
  return host_memory_end || bytes <= kMaxConstantHeldWhereReadBytes;
}

}  // namespace sluice

#endif  // SLUICE_PLACER_CONSTANTS_WHERE_READ_H_
