// The host memory CPU devices take their tensors from: CpuAllocator() with
// freed blocks of 1 MiB and more kept for reuse (a CachingHostAllocator,
// process-wide, up to 1 GiB kept). A step allocates the same sizes as the
// step before it; from the C library those come as fresh pages each time
// (blocks that large are mapped and unmapped, or trimmed from the heap and
// grown again), about a thousand page faults per step for RegNetY-400MF at
// batch 1 and 2,600 for DenseNet-121 (bench/RESULTS.md, 2026-12-05). Kept
// blocks are reused instead, as onnxruntime's CPU arena and PyTorch's
// caching allocators do. Smaller blocks faulted no page here and are
// better left to the C library, which reuses a freed range for any size:
// kept at 64 KiB and more, MobileNetV3-small was about 4% slower.
//
// What is kept goes back to the C library when a session is destroyed or
// its ReleaseUnusedMemory is called (ReleaseCachedCpuMemory). In builds with
// AddressSanitizer nothing is kept, so that a use after free still meets
// freed memory. Loading and the graph passes use CpuAllocator() directly.
//
//   Allocator* a = CachedCpuAllocator();   // what CpuDevice hands kernels
//   ReleaseCachedCpuMemory();              // after a session goes away
#ifndef SLUICE_DEVICE_CPU_MEMORY_H_
#define SLUICE_DEVICE_CPU_MEMORY_H_

#include <cstdint>

#include "core/allocator.h"
#include "device/caching_host_allocator.h"

namespace sluice {

// Blocks below this many bytes go straight to CpuAllocator().
inline constexpr size_t kMinCachedCpuBlock = size_t{1} << 20;

// The process-wide caching host allocator. Never null; thread-safe.
Allocator* CachedCpuAllocator();

// Hands every kept block back; returns their bytes.
int64_t ReleaseCachedCpuMemory();

// Its counters (bytes in use and kept, hits and misses).
CachingHostAllocator::Stats CachedCpuMemoryStats();

}  // namespace sluice

#endif  // SLUICE_DEVICE_CPU_MEMORY_H_
