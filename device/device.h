// Device: one place where kernels run and tensors live: the CPU (or a logical
// CPU), or a GPU (or a logical GPU carved out of one). Names are short and
// total: "/cpu:0", "/gpu:1".
//
//   Device* d = devices.Find("/gpu:0");
//   ASSIGN_OR_RETURN(Tensor t, Tensor::Create(DT_FLOAT, shape, d->allocator()));
//
// Devices are created by a session (executor/session.cc) and live as long as
// it does; each points to the execution provider whose kernels run on it
// (kernels/execution_provider.h). Methods are thread-safe.
#ifndef SLUICE_DEVICE_DEVICE_H_
#define SLUICE_DEVICE_DEVICE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "core/allocator.h"

namespace Eigen {
struct ThreadPoolDevice;
}  // namespace Eigen

namespace sluice {

class ExecutionProvider;

enum class DeviceType { kCpu, kGpu };
std::string DeviceTypeName(DeviceType type);  // "cpu", "gpu"

// A parsed device name or request. index -1 means "any of this type"
// ("/gpu:*"). Accepts "/cpu:0", "cpu:0", "/gpu:*", "gpu", "/device:GPU:1".
struct DeviceName {
  DeviceType type = DeviceType::kCpu;
  int index = -1;
  std::string ToString() const;  // "/gpu:1", "/gpu:*"
};
absl::StatusOr<DeviceName> ParseDeviceName(std::string_view name);

class Device {
 public:
  Device(DeviceType type, int index, int64_t memory_limit)
      : type_(type), index_(index), memory_limit_(memory_limit) {
    name_ = DeviceName{type, index}.ToString();
  }
  virtual ~Device() = default;

  const std::string& name() const { return name_; }
  DeviceType type() const { return type_; }
  int index() const { return index_; }
  // Bytes this device may use for tensors; 0 means no limit beyond the
  // machine's.
  int64_t memory_limit() const { return memory_limit_; }

  // Where tensors on this device are allocated. Never null; owned by the
  // device.
  virtual Allocator* allocator() = 0;
  // For CPU devices: the pool intra-op parallel kernels use (nullptr: run on
  // the calling thread).
  virtual const Eigen::ThreadPoolDevice* eigen_cpu_device() const {
    return nullptr;
  }

  // The execution provider whose kernels run here, with its settings; null
  // on a device no session set up (tests), whose kernels then take their
  // provider's defaults. Not owned: the provider outlives the device.
  const ExecutionProvider* provider() const { return provider_; }
  // REQUIRES: before any kernel runs on this device.
  void set_provider(const ExecutionProvider* provider) { provider_ = provider; }

 private:
  const DeviceType type_;
  const int index_;
  const int64_t memory_limit_;
  std::string name_;
  const ExecutionProvider* provider_ = nullptr;
};

}  // namespace sluice

#endif  // SLUICE_DEVICE_DEVICE_H_
