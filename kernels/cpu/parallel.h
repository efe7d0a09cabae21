// RunBlocks: the fork-join the CPU kernels split their work with (through
// ParallelFor in kernel_util.h and Gemm's tiles in gemm.h). The calling
// thread and up to (pool threads - 1) helpers scheduled on the device's
// intra-op pool claim blocks from a shared counter until none are left; the
// caller then waits, spinning briefly, for blocks still running elsewhere.
//
//   RunBlocks(ctx.device()->eigen_cpu_device(), tiles,
//             [&](int64_t t) { /* tile t */ });
//
// Why not Eigen's ThreadPoolDevice::parallelFor: it hands each block to a
// fixed thread and puts the caller to sleep on a barrier, so a helper that
// starts late (asleep, or its core busy) holds the whole region back, and
// the caller needs a wake-up at the end. Here the caller starts at once, a
// late helper finds fewer (or no) blocks left, and the caller is never
// woken. From kLeastThreadsForTeamRegions (8) pool threads up the blocks
// are claimed the same way by an OpenMP team of min(pool threads, cores)
// instead (omp_threads.h): the team oneDNN's convolutions run on, so that
// one set of workers, not two, waits for work between nodes (design
// decision 66). Thread-safe; `pool` may be null (all blocks on the calling
// thread). fn runs concurrently on different blocks.
#ifndef SLUICE_KERNELS_CPU_PARALLEL_H_
#define SLUICE_KERNELS_CPU_PARALLEL_H_

#include <cstdint>

#include "absl/functional/function_ref.h"

namespace Eigen {
struct ThreadPoolDevice;
}  // namespace Eigen

namespace sluice::cpu {

// How many threads RunBlocks may use on `pool`: 1 when it is null.
int PoolThreads(const Eigen::ThreadPoolDevice* pool);

// Calls fn(b) once for each b in [0, blocks); returns when all are done.
// At most min(blocks, pool threads) threads run them, the caller included.
void RunBlocks(const Eigen::ThreadPoolDevice* pool, int64_t blocks,
               absl::FunctionRef<void(int64_t)> fn);

}  // namespace sluice::cpu

#endif  // SLUICE_KERNELS_CPU_PARALLEL_H_
