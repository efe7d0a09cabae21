// Helpers for the placer tests: GraphDefs written in code, fake device
// topologies, kernel queries that need no kernel registry, and an
// independent check of a placement's memory use.
//
//   DefWriter w;
//   std::string x = w.Input("x", {1, 256});
//   std::string h = w.Dense("fc1", x, 256, 512);   // Const weights + MatMul
//   std::unique_ptr<const Graph> g = w.Build();
//   DeviceTopology topo = FakeTopology({Gpu(4 << 20), Gpu(4 << 20), Cpu()});
//
// Not thread-safe; tests only.
#ifndef SLUICE_TESTS_PLACER_PLACER_TEST_UTIL_H_
#define SLUICE_TESTS_PLACER_PLACER_TEST_UTIL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "placer/device_spec.h"
#include "placer/placer.h"
#include "proto/graph.pb.h"

#define PLACER_TEST_CONCAT_INNER(a, b) a##b
#define PLACER_TEST_CONCAT(a, b) PLACER_TEST_CONCAT_INNER(a, b)
// `decl` = the value of the StatusOr `expr`; the test stops if it failed.
#define ASSERT_OK_AND_ASSIGN(decl, expr) \
  ASSERT_OK_AND_ASSIGN_IMPL(PLACER_TEST_CONCAT(status_or_, __LINE__), decl, expr)
#define ASSERT_OK_AND_ASSIGN_IMPL(tmp, decl, expr) \
  auto tmp = (expr);                                \
  ASSERT_TRUE(tmp.ok()) << tmp.status();            \
  decl = *std::move(tmp)

namespace sluice {
namespace testing_util {

// Writes a GraphDef node by node; every tensor is float32.
class DefWriter {
 public:
  std::string Input(const std::string& name, std::vector<int64_t> shape);
  // A float32 constant of `shape` (all zeros, written as a splat).
  std::string Const(const std::string& name, std::vector<int64_t> shape);
  std::string Op(const std::string& op, const std::string& name,
                 std::vector<std::string> inputs);
  // Const weights [in, out] named name+"_w", and MatMul(x, w) named name.
  std::string Dense(const std::string& name, const std::string& x,
                    int64_t in, int64_t out);
  // The last node written, to add a device request, attrs or control inputs.
  NodeDef* last() { return def_.mutable_node(def_.node_size() - 1); }
  GraphDef& def() { return def_; }
  // BuildGraph; fails the test (returns nullptr) on error.
  std::unique_ptr<const Graph> Build() const;

 private:
  GraphDef def_;
};

// A transformer-encoder-like stack: input "x" [tokens, width], then
// `layers` layers named "l<i>/...", each Q/K/V projections mixed
// elementwise, an output projection with a residual Add, and a feed-forward
// block (width -> 4 width -> width) with a second residual Add ("l<i>/out",
// the only value the next layer reads). 48 width^2 bytes of weights a layer.
std::unique_ptr<const Graph> EncoderStack(int layers, int64_t tokens,
                                          int64_t width);

// Fake devices: default rates, a budget of exactly `budget` bytes.
DeviceSpec Gpu(int64_t budget);
DeviceSpec Cpu(int64_t budget = kUnlimitedBudget);
// Numbers the devices per type (/gpu:0, /gpu:1, /cpu:0) and builds links.
DeviceTopology FakeTopology(std::vector<DeviceSpec> devices);

// Every op has a kernel on every device type, except the ops listed in
// `cpu_only` (NOT_FOUND on a GPU).
KernelQuery AllKernels(std::vector<std::string> cpu_only = {});
// AllKernels, where the GPU kernels also refuse (UNIMPLEMENTED, "rank 5 >
// 4") a node with an input of rank above `max_rank`: a capability check.
KernelQuery GpuRankAtMost(int max_rank, std::vector<std::string> cpu_only = {});

// Weights and peak activations per device, recomputed from the graph, the
// placement and the rules in placer.h (rule 5), independently of the
// placer's own bookkeeping.
struct MemoryCheck {
  std::vector<int64_t> weights;
  std::vector<int64_t> peak;
};
MemoryCheck RecomputeMemory(const Graph& graph, const DeviceTopology& topo,
                            const Placement& p, int64_t batch = 1);

}  // namespace testing_util
}  // namespace sluice

#endif  // SLUICE_TESTS_PLACER_PLACER_TEST_UTIL_H_
