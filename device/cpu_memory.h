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
// Blocks are kept only while a session is alive (CpuMemoryUse, one per
// session); when the last one goes, what is kept goes back to the C library,
// and ReleaseCachedCpuMemory (Session::ReleaseUnusedMemory) gives it back at
// any time. It is one cache for the process: every session's steps reuse
// it. A logical CPU's budget (LimitedAllocator over this) counts the bytes
// its tensors ask for, not the rounding of a reused block (up to twice the
// size) nor what is kept. In builds with AddressSanitizer nothing is kept,
// so that a use after free still meets freed memory. Loading and the graph
// passes use CpuAllocator() directly.
//
//   CpuMemoryUse use;                      // a session's member
//   Allocator* a = CachedCpuAllocator();   // what its CpuDevices hand kernels
//   ReleaseCachedCpuMemory();              // ReleaseUnusedMemory
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

// While one is alive, blocks freed are kept; the last one's destruction
// hands them back. Thread-safe.
class CpuMemoryUse {
 public:
  CpuMemoryUse();
  ~CpuMemoryUse();
  CpuMemoryUse(const CpuMemoryUse&) = delete;
  CpuMemoryUse& operator=(const CpuMemoryUse&) = delete;
};

// Its counters (bytes in use and kept, hits and misses).
CachingHostAllocator::Stats CachedCpuMemoryStats();

}  // namespace sluice

#endif  // SLUICE_DEVICE_CPU_MEMORY_H_
