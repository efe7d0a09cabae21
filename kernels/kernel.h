// OpKernel: the code that runs one node on one device type. A kernel object
// is made once per node when a plan is compiled, by a factory that parses
// its attributes then (MakeKernel<K> in kernel_registry.h calls
// K::ParseAttrs, so a bad attribute is an error at creation), and its
// Compute runs every step reading only the parsed values.
//
//   class SoftmaxKernel : public OpKernel {
//    public:
//     struct Attrs { int64_t axis = -1; };
//     static absl::StatusOr<Attrs> ParseAttrs(const Node& node);
//     SoftmaxKernel(const Node& node, Attrs attrs)
//         : OpKernel(node), axis_(attrs.axis) {}
//     absl::Status Compute(OpKernelContext* ctx) override {
//       ASSIGN_OR_RETURN(Tensor* y, ctx->allocate_output(0, ctx->input(0).shape()));
//       ...
//     }
//    private:
//     const int64_t axis_;
//   };
//
// Compute may run concurrently for different steps: a kernel's per-step
// state lives in the context; what it keeps across steps (the oneDNN
// kernels' primitives and reordered filters, cuDNN's measured algorithms)
// is a cache behind its own mutex, whose entries are never changed once
// made.
#ifndef SLUICE_KERNELS_KERNEL_H_
#define SLUICE_KERNELS_KERNEL_H_

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/tensor.h"
#include "device/device.h"
#include "graph/graph.h"

namespace sluice {

// A step's deadline, cancellation flag and fault injector
// (executor/step_limits.h). Kernels only hand it on, to the subgraphs they
// run (kernels/subgraph_kernel.h); the executor checks it.
struct StepLimits;

// What one Compute call sees: its inputs, and where its outputs go.
class OpKernelContext {
 public:
  // All pointers are borrowed and must outlive the context.
  OpKernelContext(const Node* node, Device* device,
                  absl::Span<const Tensor> inputs, absl::Span<Tensor> outputs)
      : node_(node), device_(device), inputs_(inputs), outputs_(outputs) {}

  const Node& node() const { return *node_; }
  Device* device() const { return device_; }

  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  const Tensor& input(int i) const { return inputs_[i]; }
  int num_outputs() const { return static_cast<int>(outputs_.size()); }

  // Allocates output `port` on the device, with the node's output dtype (or
  // `dtype`). RESOURCE_EXHAUSTED when the device's memory runs out.
  absl::StatusOr<Tensor*> allocate_output(int port, const Shape& shape);
  absl::StatusOr<Tensor*> allocate_output(int port, const Shape& shape,
                                          DataType dtype);
  // Sets an output to an existing tensor (Identity, Reshape: no copy).
  void set_output(int port, Tensor t) { outputs_[port] = std::move(t); }
  const Tensor& output(int port) const { return outputs_[port]; }
  // Scratch memory on the device, freed when the returned tensor goes away
  // (and the keep-alive list, if any, lets go of it).
  absl::StatusOr<Tensor> allocate_temp(DataType dtype, const Shape& shape);

  // While a step is recorded as a CUDA graph (executor/gpu_graph_runner.h),
  // the replays write the kernels' scratch memory again, so every temp is
  // also kept in `keep` (borrowed) for as long as the graph lives.
  void set_keep_alive(std::vector<Tensor>* keep) { keep_alive_ = keep; }

  // For a kernel that computes a float16 / bfloat16 node in float32
  // (kernels/cpu/float32_fallback.h): allocate_output(port, shape) then
  // makes float32 where the node declares one of those two.
  void set_reduced_outputs_in_float32(bool on) { reduced_in_float32_ = on; }

  // The limits of the step this Compute belongs to (borrowed; null: none).
  // A kernel that runs subgraphs (If, Loop, Scan) passes them to
  // CompiledSubgraph::Run, so that a deadline, a cancellation or an
  // injected fault stops the step inside the subgraph too.
  void set_step_limits(const StepLimits* limits) { step_limits_ = limits; }
  const StepLimits* step_limits() const { return step_limits_; }

 private:
  const Node* node_;
  Device* device_;
  absl::Span<const Tensor> inputs_;
  absl::Span<Tensor> outputs_;
  std::vector<Tensor>* keep_alive_ = nullptr;
  bool reduced_in_float32_ = false;
  const StepLimits* step_limits_ = nullptr;
};

class OpKernel {
 public:
  // `node` must outlive the kernel (the graph owns it).
  explicit OpKernel(const Node& node) : node_(node) {}
  virtual ~OpKernel() = default;
  OpKernel(const OpKernel&) = delete;
  OpKernel& operator=(const OpKernel&) = delete;

  const Node& node() const { return node_; }

  // Checks inputs (dtypes, shapes, index ranges) before touching memory and
  // returns a Status naming what is wrong; the executor adds the node's name.
  virtual absl::Status Compute(OpKernelContext* ctx) = 0;

 private:
  const Node& node_;
};

}  // namespace sluice

#endif  // SLUICE_KERNELS_KERNEL_H_
