// ParallelMemcpy: a large host-to-host copy split over a few threads, for
// filling pinned buffers from pageable memory. One core copies pageable
// memory at about 10 GB/s, a fifth of what the pinned DMA that follows can
// carry (55 GB/s on the H200 machine), so a single-threaded fill would be
// the bottleneck of every host-to-GPU copy.
//
//   ParallelMemcpy(pinned, feed.raw_data(), feed.bytes());
//
// Copies under 4 MiB run on the calling thread. Thread-safe; the worker
// threads (half the cores, 2 to 16) are made once per process.
#ifndef SLUICE_DEVICE_PARALLEL_MEMCPY_H_
#define SLUICE_DEVICE_PARALLEL_MEMCPY_H_

#include <cstddef>

namespace sluice {

// REQUIRES: [dst, dst + n) and [src, src + n) do not overlap.
void ParallelMemcpy(void* dst, const void* src, size_t n);

}  // namespace sluice

#endif  // SLUICE_DEVICE_PARALLEL_MEMCPY_H_
