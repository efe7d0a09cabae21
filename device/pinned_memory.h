// Page-locked ("pinned") host memory: the process-wide allocator of it, and
// whether a host tensor's bytes are page-locked (sluice's, or the caller's
// own: cudaHostAlloc, cudaHostRegister, torch's pin_memory()). A GPU copies
// page-locked memory by one DMA with no host-to-host staging copy, which is
// what GpuDevice's copies and a replayed CUDA graph's feeds look for
// (docs/design.md decision 30).
//
//   Allocator* pinned = PinnedHostAllocator();   // never null
//   ASSIGN_OR_RETURN(Tensor x, Tensor::Create(DT_FLOAT, shape, pinned));
//   bool direct = IsPageLocked(x);               // true where CUDA is usable
//
// The allocator is process-wide and never destroyed, so a Tensor in its
// memory may outlive every session (cudaFreeHost needs no session). Its
// memory is pinned for every GPU of the process (cudaHostAllocPortable).
// Freed blocks are kept for reuse, up to kMaxCachedPinnedBytes
// (device/caching_host_allocator.h): pinning costs about a millisecond per
// ten megabytes and cudaFreeHost synchronises the device, which a step
// fetching into page-locked memory every time must not pay.
// Thread-safe. This header is CUDA-free; device/cuda/pinned_memory.cc is
// the CUDA side, and a build without CUDA gets the inline fallbacks below.
#ifndef SLUICE_DEVICE_PINNED_MEMORY_H_
#define SLUICE_DEVICE_PINNED_MEMORY_H_

#include <cstddef>

#include "absl/status/statusor.h"
#include "core/allocator.h"
#include "core/tensor.h"
#include "device/caching_host_allocator.h"

namespace sluice {

// The most freed page-locked bytes the process keeps for reuse (1 GiB).
inline constexpr int64_t kMaxCachedPinnedBytes = int64_t{1} << 30;

#ifdef SLUICE_WITH_CUDA
// The process-wide allocator of page-locked host memory (host_accessible,
// 64-byte aligned like CpuAllocator's). Allocate is RESOURCE_EXHAUSTED
// naming the bytes when the driver cannot pin that much, and an error
// naming CUDA's reason where no GPU is usable: a caller that may have no
// GPU asks a session (Session::AllocateHostTensor), which then gives
// ordinary host memory instead.
Allocator* PinnedHostAllocator();
// Whether every byte of `t` is host memory the GPUs can DMA directly:
// memory of PinnedHostAllocator(), or memory that CUDA reports as
// page-locked host memory (cudaPointerGetAttributes type
// cudaMemoryTypeHost) at the tensor's first and last byte (a caller's one
// registration: the case of cudaHostAlloc, cudaHostRegister and
// torch.Tensor.pin_memory(), seen as external memory or through DLPack).
// False for device memory, pageable memory, an empty tensor, and where
// CUDA is not usable; memory of CpuAllocator() counts as pageable without
// asking CUDA (were a caller to register it, its copies would be staged:
// the same bytes, at the staged speed).
bool IsPageLocked(const Tensor& t);
// The same for `bytes` bytes at `data` (no allocator shortcut).
bool IsPageLockedRange(const void* data, size_t bytes);
// What PinnedHostAllocator holds: in use, kept for reuse, cache hits and
// misses (each miss a cudaHostAlloc).
CachingHostAllocator::Stats PinnedHostMemoryStats();
// Hands the page-locked blocks no tensor holds back to the driver (the
// whole process's); returns their bytes.
int64_t ReleaseCachedPinnedMemory();
#else
// A build without CUDA: no page-locked memory; ordinary host memory
// instead, which every path here copies correctly.
inline Allocator* PinnedHostAllocator() { return CpuAllocator(); }
inline bool IsPageLocked(const Tensor&) { return false; }
inline bool IsPageLockedRange(const void*, size_t) { return false; }
inline CachingHostAllocator::Stats PinnedHostMemoryStats() { return {}; }
inline int64_t ReleaseCachedPinnedMemory() { return 0; }
#endif  // SLUICE_WITH_CUDA

}  // namespace sluice

#endif  // SLUICE_DEVICE_PINNED_MEMORY_H_
