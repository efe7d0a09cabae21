#include "core/allocator.h"

#include <cstdlib>
#include <new>

#include "absl/strings/str_cat.h"

namespace sluice {
namespace {

class HostAllocator final : public Allocator {
 public:
  std::string Name() const override { return "cpu"; }
  bool host_accessible() const override { return true; }
  absl::StatusOr<void*> Allocate(size_t bytes) override {
    size_t rounded = (bytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
    if (rounded == 0) rounded = kCpuAlignment;
    void* p = std::aligned_alloc(kCpuAlignment, rounded);
    if (p == nullptr) {
      return absl::ResourceExhaustedError(
          absl::StrCat("host allocation of ", bytes, " bytes failed"));
    }
    return p;
  }
  void Deallocate(void* ptr, size_t /*bytes*/) override { std::free(ptr); }
};

}  // namespace

Allocator* CpuAllocator() {
  static Allocator* const kAllocator = new HostAllocator();
  return kAllocator;
}

}  // namespace sluice
