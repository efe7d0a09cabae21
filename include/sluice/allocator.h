// Allocator: where a tensor's bytes come from. The CPU allocator is
// process-wide; each GPU session owns its own device allocators (device/).
//
//   Allocator* cpu = CpuAllocator();
//   absl::StatusOr<void*> p = cpu->Allocate(4096);
//   cpu->Deallocate(*p, 4096);
//
// Implementations must be thread-safe.
#ifndef SLUICE_ALLOCATOR_H_
#define SLUICE_ALLOCATOR_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"

namespace sluice {

inline constexpr size_t kCpuAlignment = 64;

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual std::string Name() const = 0;
  // Whether the host can read and write the memory directly.
  virtual bool host_accessible() const = 0;
  // Returns memory of at least `bytes` (a valid, unique pointer even for 0
  // bytes). RESOURCE_EXHAUSTED when the limit or the device is out of memory.
  virtual absl::StatusOr<void*> Allocate(size_t bytes) = 0;
  // REQUIRES: `ptr` came from Allocate on this allocator with `bytes`.
  virtual void Deallocate(void* ptr, size_t bytes) = 0;
};

// The process-wide host allocator (64-byte aligned). Never null.
Allocator* CpuAllocator();

}  // namespace sluice

#endif  // SLUICE_ALLOCATOR_H_
