#include "device/external_memory.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/tensor.h"
#include "device/device.h"

namespace sluice {
namespace {

// The allocator of one wrapped buffer: it allocates nothing, and its
// Deallocate (which Buffer's destructor calls last) runs the release
// callback and deletes the allocator itself. One per buffer, so a tensor's
// allocator tells which device its memory is on.
class ExternalAllocator final : public Allocator {
 public:
  ExternalAllocator(std::string device, bool host,
                    std::function<void()> release)
      : device_(std::move(device)), host_(host),
        release_(std::move(release)) {}
  std::string Name() const override {
    return absl::StrCat("external memory on ", device_);
  }
  bool host_accessible() const override { return host_; }
  absl::StatusOr<void*> Allocate(size_t) override {
    return absl::InternalError("external memory allocates nothing");
  }
  void Deallocate(void*, size_t) override {
    if (release_) release_();
    delete this;
  }
  const std::string& device() const { return device_; }

 private:
  const std::string device_;
  const bool host_;
  const std::function<void()> release_;
};

}  // namespace

absl::StatusOr<Tensor> WrapExternalMemory(DataType dtype, const Shape& shape,
                                          void* data, std::string_view device,
                                          std::function<void()> release) {
  absl::StatusOr<DeviceName> name = ParseDeviceName(device);
  if (!name.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "external memory: ", name.status().message()));
  }
  if (name->index < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "external memory: '", absl::string_view(device.data(), device.size()),
        "' is not a single device; name one, such as /gpu:0"));
  }
  if (!shape.IsFullyDefined()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "external memory: shape ", shape.DebugString(),
        " is not fully defined"));
  }
  if (DataTypeSize(dtype) == 0) {
    return absl::InvalidArgumentError("external memory: invalid dtype");
  }
  ASSIGN_OR_RETURN(int64_t n, shape.NumElements());
  const size_t bytes = static_cast<size_t>(n) * DataTypeSize(dtype);
  if (data == nullptr && bytes > 0) {
    return absl::InvalidArgumentError(
        "external memory: null data for a tensor with elements");
  }
  auto* allocator = new ExternalAllocator(
      name->ToString(), name->type == DeviceType::kCpu, std::move(release));
  // FromBuffer cannot fail now: dtype, shape and size are checked above.
  auto buffer = std::make_shared<Buffer>(allocator, data, bytes);
  return Tensor::FromBuffer(dtype, shape, std::move(buffer));
}

std::string ExternalMemoryDevice(const Tensor& tensor) {
  const auto* external =
      dynamic_cast<const ExternalAllocator*>(tensor.allocator());
  return external != nullptr ? external->device() : std::string();
}

}  // namespace sluice
