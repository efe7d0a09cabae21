// PinnedHostAllocator and IsPageLocked (device/pinned_memory.h) on the CUDA
// runtime: cudaHostAlloc / cudaFreeHost, and cudaPointerGetAttributes.
#include "device/pinned_memory.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/tensor.h"
#include "cuda_runtime_api.h"
#include "device/cpu_memory.h"
#include "device/cuda/cuda_status.h"

namespace sluice {
namespace {

class PinnedAllocator final : public Allocator {
 public:
  std::string Name() const override { return "page-locked host memory"; }
  bool host_accessible() const override { return true; }
  absl::StatusOr<void*> Allocate(size_t bytes) override {
    void* p = nullptr;
    // At least one byte, so that every call gets a unique pointer; pinned
    // for every GPU of the process, whichever is current.
    const cudaError_t err = cudaHostAlloc(&p, std::max<size_t>(bytes, 1),
                                          cudaHostAllocPortable);
    if (err == cudaSuccess) return p;
    cudaGetLastError();
    const std::string what = absl::StrCat(
        "cudaHostAlloc of ", bytes, " bytes of page-locked host memory");
    if (err == cudaErrorMemoryAllocation) {
      return absl::ResourceExhaustedError(absl::StrCat(
          what, " failed: ", cudaGetErrorString(err),
          " (the OS limits how much memory may be locked)"));
    }
    return absl::FailedPreconditionError(absl::StrCat(
        what, " failed: ", cudaGetErrorString(err), " (",
        cudaGetErrorName(err), "); page-locked memory needs a usable GPU"));
  }
  void Deallocate(void* ptr, size_t /*bytes*/) override {
    // After the CUDA runtime has been unloaded (a Tensor in a static freed
    // at exit) this fails; the process is going away anyway.
    if (cudaFreeHost(ptr) != cudaSuccess) cudaGetLastError();
  }
};

bool PinnedByte(const void* p) {
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    cudaGetLastError();  // no GPU, no driver: nothing is page-locked for CUDA
    return false;
  }
  return attr.type == cudaMemoryTypeHost;
}

CachingHostAllocator* PinnedCache() {
  static CachingHostAllocator* const kPinned = new CachingHostAllocator(
      std::make_unique<PinnedAllocator>(), kMaxCachedPinnedBytes);
  return kPinned;
}

}  // namespace

Allocator* PinnedHostAllocator() { return PinnedCache(); }

CachingHostAllocator::Stats PinnedHostMemoryStats() {
  return PinnedCache()->GetStats();
}

int64_t ReleaseCachedPinnedMemory() { return PinnedCache()->ReleaseCached(); }

bool IsPageLockedRange(const void* data, size_t bytes) {
  if (data == nullptr || bytes == 0) return false;
  const char* first = static_cast<const char*>(data);
  return PinnedByte(first) && PinnedByte(first + bytes - 1);
}

bool IsPageLocked(const Tensor& t) {
  if (!t.valid() || t.buffer() == nullptr || !t.on_host() || t.bytes() == 0) {
    return false;
  }
  if (t.allocator() == PinnedHostAllocator()) return true;
  // sluice's own pageable memory, without asking CUDA twice per copy.
  if (t.allocator() == CpuAllocator() || t.allocator() == CachedCpuAllocator()) {
    return false;
  }
  return IsPageLockedRange(t.raw_data(), t.bytes());
}

}  // namespace sluice
