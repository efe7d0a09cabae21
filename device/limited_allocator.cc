// LimitedAllocator: a counting wrapper that enforces a byte budget.
#include "device/limited_allocator.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace sluice {

LimitedAllocator::LimitedAllocator(Allocator* base, std::string device_name,
                                   int64_t limit)
    : base_(base), device_name_(std::move(device_name)), limit_(limit) {}

std::string LimitedAllocator::Name() const {
  return absl::StrCat(base_->Name(), " (", device_name_, ", limit ", limit_,
                      " bytes)");
}

absl::StatusOr<void*> LimitedAllocator::Allocate(size_t bytes) {
  const int64_t asked = static_cast<int64_t>(bytes);
  {
    absl::MutexLock lock(&mu_);
    if (asked < 0 || asked > limit_ - in_use_) {
      return absl::ResourceExhaustedError(absl::StrCat(
          device_name_, ": cannot allocate ", bytes, " bytes: limit ", limit_,
          " bytes, ", in_use_, " in use"));
    }
    in_use_ += asked;  // reserve before allocating, release on failure
    ++live_;
    if (in_use_ > peak_) peak_ = in_use_;
  }
  absl::StatusOr<void*> p = base_->Allocate(bytes);
  if (!p.ok()) {
    absl::MutexLock lock(&mu_);
    in_use_ -= asked;
    --live_;
  }
  return p;
}

void LimitedAllocator::Deallocate(void* ptr, size_t bytes) {
  base_->Deallocate(ptr, bytes);
  bool last = false;
  {
    absl::MutexLock lock(&mu_);
    in_use_ -= static_cast<int64_t>(bytes);
    --live_;
    last = retired_ && live_ == 0;
  }
  if (last) delete this;
}

void LimitedAllocator::Retire(std::unique_ptr<LimitedAllocator> allocator) {
  if (allocator == nullptr) return;
  LimitedAllocator* a = allocator.release();
  bool now = false;
  {
    absl::MutexLock lock(&a->mu_);
    a->retired_ = true;
    now = a->live_ == 0;
  }
  if (now) delete a;
}

int64_t LimitedAllocator::bytes_in_use() const {
  absl::MutexLock lock(&mu_);
  return in_use_;
}

int64_t LimitedAllocator::peak_bytes_in_use() const {
  absl::MutexLock lock(&mu_);
  return peak_;
}

}  // namespace sluice
