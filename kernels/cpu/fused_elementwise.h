// The CPU kernel of FusedElementwise (graph/elementwise_program.h): the
// program runs over the output in blocks of about kFusedElementwiseBlock
// elements (whole rows of the merged inner dimension where they fit), one
// instruction at a time over the whole block (so each loop is a short
// vectorisable loop and a block's values stay in L1 / L2), blocks shared
// between the intra-op pool's threads (parallel.h). Inputs of the output's
// shape are read in place; a one-element input, or one constant over the
// block (a per-channel scale over a row), is one value; an input
// broadcast over the block's rows (a bias, a [B,1,1,S] mask) is one row,
// read in place; other broadcasts are gathered a run at a time. An op on
// such values only is computed once per block (or per row). 16-bit floats
// compute in float. Each op computes what the unfused CPU kernel of the
// same name does.
//
//   cpu::RegisterFusedElementwiseKernels(&registry);  // RegisterCpuKernels
//
// Stateless registration; the kernel is thread-safe (Compute keeps its
// scratch per call).
#ifndef SLUICE_KERNELS_CPU_FUSED_ELEMENTWISE_H_
#define SLUICE_KERNELS_CPU_FUSED_ELEMENTWISE_H_

#include <cstdint>

#include "kernels/kernel_registry.h"

namespace sluice::cpu {

// Elements per block: 1024 (4 KiB of floats per value) keeps a chain's few
// live values in L1 / L2 while the per-block work (the dispatch of each op,
// the broadcast cursors) stays small beside the loops; 256 measured up to
// 2x slower than the unfused ops on cache-resident tensors
// (bench/elementwise_fusion_bench.cc).
inline constexpr int64_t kFusedElementwiseBlock = 1024;

void RegisterFusedElementwiseKernels(KernelRegistry* registry);

}  // namespace sluice::cpu

#endif  // SLUICE_KERNELS_CPU_FUSED_ELEMENTWISE_H_
