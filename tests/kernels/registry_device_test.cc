// The kernel registry, the source kernels, CpuDevice, LimitedAllocator and
// device names.
#include <memory>
#include <vector>

#include "device/cpu_device.h"
#include "device/limited_allocator.h"
#include "gmock/gmock.h"
#include "graph/loader.h"
#include "gtest/gtest.h"
#include "kernel_test_util.h"
#include "kernels/kernel_registry.h"
#include "testing/counting_allocator.h"

namespace sluice::testing::registry_device_test {
namespace {

using ::testing::HasSubstr;

TEST(KernelRegistryTest, NotFoundNamesOpDtypesAndRegisteredCombinations) {
  // float64 Conv2D is allowed by the schema but has no CPU kernel (float32,
  // and float16 / bfloat16 through float32: kernels/cpu/float32_fallback.h).
  auto out = RunOp("Conv2D", {MakeTensor(DT_DOUBLE, {1, 1, 1, 1}, {1}),
                              MakeTensor(DT_DOUBLE, {1, 1, 1, 1}, {1})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(out.status().message(), HasSubstr("Conv2D"));
  EXPECT_THAT(out.status().message(), HasSubstr("T=float64"));
  EXPECT_THAT(out.status().message(), HasSubstr("T in [float32]"));
  EXPECT_THAT(out.status().message(), HasSubstr("T in [float16, bfloat16]"));
}

TEST(KernelRegistryTest, Float16ConvolutionRunsOnTheCpuThroughFloat32) {
  // x = 1..4 in a 2x2 plane, a 1x1 filter of 0.5: the float32 kernel's
  // result, rounded to float16.
  auto out = RunOp("Conv2D", {MakeTensor(DT_FLOAT16, {1, 1, 2, 2}, {1, 2, 3, 4}),
                              MakeTensor(DT_FLOAT16, {1, 1, 1, 1}, {0.5})});
  ASSERT_TRUE(out.ok()) << out.status();
  const Tensor& y = (*out)[0];
  ASSERT_EQ(y.dtype(), DT_FLOAT16);
  EXPECT_EQ(static_cast<float>(y.data<half>()[3]), 2.0f);
  EXPECT_EQ(static_cast<float>(y.data<half>()[0]), 0.5f);
}

TEST(KernelRegistryTest, EveryDocumentedOpHasACpuKernel) {
  const std::vector<std::string> ops = {
      "Const", "Input", "Identity", "Cast", "Neg", "Abs", "Relu", "Exp", "Log",
      "Sqrt", "Rsqrt", "Tanh", "Sigmoid", "Erf", "Gelu", "Add", "Sub", "Mul",
      "Div", "Pow", "Maximum", "Minimum", "Equal", "Less", "Greater", "Where",
      "MatMul", "Softmax", "LayerNorm", "RMSNorm", "ReduceSum", "ReduceMean",
      "ReduceMax", "Reshape", "Transpose", "Concat", "Split", "Slice", "Gather", "Expand",
      "Squeeze", "Unsqueeze", "Conv2D", "MaxPool", "AvgPool", "GlobalAvgPool"};
  for (const std::string& op : ops) {
    bool cpu = false;
    for (const KernelDef* def : KernelRegistry::Global()->KernelsFor(op)) {
      cpu = cpu || def->device == DeviceType::kCpu;
    }
    EXPECT_TRUE(cpu) << op;
  }
}

TEST(SourceKernelTest, InputKernelRefusesToRun) {
  GraphDef def;
  NodeDef* in = def.add_node();
  in->set_name("x");
  in->set_op("Input");
  (*in->mutable_attr())["dtype"] = TypeAttr(DT_FLOAT);
  auto graph = BuildGraph(def);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node* node = (*graph)->FindNode("x");
  auto kernel = KernelRegistry::Global()->Create(*node, DeviceType::kCpu);
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  CpuDevice cpu(0, 0, 1);
  std::vector<Tensor> outputs(1);
  OpKernelContext ctx(node, &cpu, {}, absl::MakeSpan(outputs));
  absl::Status s = (*kernel)->Compute(&ctx);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("fed"));
}

TEST(SourceKernelTest, ConstOutputsItsValue) {
  GraphDef def;
  NodeDef* c = def.add_node();
  c->set_name("c");
  c->set_op("Const");
  AttrValue value;
  TensorProto* p = value.mutable_tensor();
  p->set_dtype(DT_INT32);
  p->mutable_shape()->add_dim(3);
  for (int v : {4, 5, 6}) p->add_int_val(v);
  (*c->mutable_attr())["value"] = value;
  auto graph = BuildGraph(def);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node* node = (*graph)->FindNode("c");
  auto kernel = KernelRegistry::Global()->Create(*node, DeviceType::kCpu);
  ASSERT_TRUE(kernel.ok());
  CpuDevice cpu(0, 0, 1);
  std::vector<Tensor> outputs(1);
  OpKernelContext ctx(node, &cpu, {}, absl::MakeSpan(outputs));
  ASSERT_TRUE((*kernel)->Compute(&ctx).ok());
  ExpectTensor(outputs[0], {3}, {4, 5, 6});
}

TEST(CpuDeviceTest, MemoryLimitFailsKernelOutputs) {
  RunOptions small;
  small.memory_limit = 64;  // 16 floats
  auto ok = RunOp("Neg", {F32(std::vector<float>(16, 1), {16})}, {}, small);
  EXPECT_TRUE(ok.ok()) << ok.status();
  auto big = RunOp("Neg", {F32(std::vector<float>(17, 1), {17})}, {}, small);
  EXPECT_EQ(big.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(big.status().message(), HasSubstr("/cpu:0"));
  EXPECT_THAT(big.status().message(), HasSubstr("68 bytes"));
  EXPECT_THAT(big.status().message(), HasSubstr("limit 64"));
}

TEST(CpuDeviceTest, PoolOnlyWithMoreThanOneThread) {
  CpuDevice one(0, 0, 1);
  CpuDevice four(1, 0, 4);
  EXPECT_EQ(one.eigen_cpu_device(), nullptr);
  EXPECT_NE(four.eigen_cpu_device(), nullptr);
  EXPECT_EQ(four.name(), "/cpu:1");
  EXPECT_EQ(one.allocator(), CpuAllocator());
}

TEST(LimitedAllocatorTest, CountsAndReleases) {
  LimitedAllocator a(CpuAllocator(), "/cpu:2", 100);
  auto p = a.Allocate(60);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(a.bytes_in_use(), 60);
  auto q = a.Allocate(41);
  EXPECT_EQ(q.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(q.status().message(), HasSubstr("/cpu:2"));
  EXPECT_THAT(q.status().message(), HasSubstr("41 bytes"));
  EXPECT_THAT(q.status().message(), HasSubstr("60 in use"));
  a.Deallocate(*p, 60);
  EXPECT_EQ(a.bytes_in_use(), 0);
  EXPECT_EQ(a.peak_bytes_in_use(), 60);
  auto r = a.Allocate(100);
  ASSERT_TRUE(r.ok());
  a.Deallocate(*r, 100);
}

TEST(LimitedAllocatorTest, ARetiredAllocatorServesTheBuffersItHandedOut) {
  CountingAllocator base;  // its memory going back shows the retirement
  auto a = std::make_unique<LimitedAllocator>(&base, "/cpu:0", 1 << 20);
  Allocator* raw = a.get();
  absl::StatusOr<Tensor> kept = Tensor::Create(DT_FLOAT, Shape({4}), raw);
  ASSERT_TRUE(kept.ok()) << kept.status();
  kept->flat<float>()[3] = 7.0f;
  // The owner (a CpuDevice going away with its session) lets go first.
  LimitedAllocator::Retire(std::move(a));
  EXPECT_EQ(kept->flat<float>()[3], 7.0f);
  EXPECT_EQ(base.counts().frees, 0);
  // The last buffer's release returns its bytes and deletes the allocator
  // (ASan's builds: a use after free or a leak here fails the test).
  *kept = Tensor();
  EXPECT_EQ(base.counts().allocations, 1);
  EXPECT_EQ(base.counts().frees, 1);
  // An idle allocator retires at once.
  LimitedAllocator::Retire(std::make_unique<LimitedAllocator>(&base, "/cpu:1", 64));
}

TEST(LimitedAllocatorTest, AnEmptyBufferKeepsARetiredAllocatorToo) {
  // An empty tensor holds a buffer of 0 bytes whose release still calls
  // the allocator: retirement must wait for it (ASan's builds fail here on
  // a use after free otherwise).
  CountingAllocator base;
  auto a = std::make_unique<LimitedAllocator>(&base, "/cpu:0", 1 << 20);
  absl::StatusOr<Tensor> empty = Tensor::Create(DT_FLOAT, Shape({0, 3}), a.get());
  absl::StatusOr<Tensor> full = Tensor::Create(DT_FLOAT, Shape({8}), a.get());
  ASSERT_TRUE(empty.ok() && full.ok());
  EXPECT_EQ(a->bytes_in_use(), 32);
  LimitedAllocator::Retire(std::move(a));
  *full = Tensor();   // bytes in use 0, one allocation left
  EXPECT_EQ(base.counts().frees, 1);
  *empty = Tensor();  // the last one: deletes the allocator
  EXPECT_EQ(base.counts().frees, 2);
  EXPECT_EQ(base.counts().live_bytes, 0);
}

TEST(DeviceNameTest, ParsesAndPrints) {
  struct Case {
    const char* in;
    DeviceType type;
    int index;
    const char* out;
  };
  for (const Case& c : std::vector<Case>{
           {"/cpu:0", DeviceType::kCpu, 0, "/cpu:0"},
           {"gpu:1", DeviceType::kGpu, 1, "/gpu:1"},
           {"/gpu:*", DeviceType::kGpu, -1, "/gpu:*"},
           {"gpu", DeviceType::kGpu, -1, "/gpu:*"},
           {"/device:GPU:3", DeviceType::kGpu, 3, "/gpu:3"}}) {
    auto n = ParseDeviceName(c.in);
    ASSERT_TRUE(n.ok()) << c.in << ": " << n.status();
    EXPECT_EQ(n->type, c.type);
    EXPECT_EQ(n->index, c.index);
    EXPECT_EQ(n->ToString(), c.out);
  }
  for (const char* bad : {"/tpu:0", "/gpu:-1", "/gpu:x", "/gpu:1:2", ""}) {
    EXPECT_EQ(ParseDeviceName(bad).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

}  // namespace
}  // namespace sluice::testing::registry_device_test
