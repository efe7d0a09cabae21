// Kernel creation and capability: attributes are parsed once, when the
// kernel is made, and their errors come then (named), never from Compute;
// KernelRegistry::Supports says whether a kernel can run a node for its
// inferred shapes, with the kernel's reason when it cannot.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "graph/loader.h"
#include "gtest/gtest.h"
#include "kernel_test_util.h"
#include "kernels/kernel_registry.h"

namespace sluice::testing::capability_test {
namespace {

using ::testing::HasSubstr;

// A graph x (Input of `shape`) -> op "y", with `attrs` on y.
std::unique_ptr<const Graph> OneOp(const std::string& op, const Shape& shape,
                                   const Attrs& attrs = {},
                                   DataType dtype = DT_FLOAT) {
  GraphDef def;
  NodeDef* in = def.add_node();
  in->set_name("x");
  in->set_op("Input");
  (*in->mutable_attr())["dtype"] = TypeAttr(dtype);
  AttrValue s;
  *s.mutable_shape() = ShapeToProto(shape);
  (*in->mutable_attr())["shape"] = s;
  NodeDef* y = def.add_node();
  y->set_name("y");
  y->set_op(op);
  y->add_input("x");
  for (const auto& [name, value] : attrs) (*y->mutable_attr())[name] = value;
  absl::StatusOr<std::unique_ptr<const Graph>> g = BuildGraph(def);
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? *std::move(g) : nullptr;
}

const KernelDef* CpuDef(const std::string& op) {
  for (const KernelDef* def : KernelRegistry::Global()->KernelsFor(op)) {
    if (def->device == DeviceType::kCpu) return def;
  }
  return nullptr;
}

// A kernel whose Compute counts calls and that needs an int attribute
// "_scale" (the builder keeps '_' attributes without a schema).
int compute_calls = 0;

class ScaleKernel final : public OpKernel {
 public:
  struct Attrs {
    int64_t scale = 0;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.scale, node.attrs().GetInt("_scale"));
    if (a.scale <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("attribute '_scale' must be > 0, got ", a.scale));
    }
    return a;
  }
  // The attribute is only parsed (the tests check its errors), not used.
  ScaleKernel(const Node& node, Attrs attrs) : OpKernel(node) {}
  absl::Status Compute(OpKernelContext* ctx) override {
    ++compute_calls;
    return absl::OkStatus();
  }
};

// A registry with one CPU Relu kernel (ScaleKernel) that runs ranks <= 2.
std::unique_ptr<KernelRegistry> RankTwoRegistry() {
  auto r = std::make_unique<KernelRegistry>();
  KernelDef def;
  def.op = "Relu";
  def.device = DeviceType::kCpu;
  def.type_constraints = {{"T", {DT_FLOAT}}};
  def.factory = MakeKernel<ScaleKernel>;
  def.supports = [](const Node& node) -> absl::Status {
    const Shape& s = node.input_shape(0);
    if (!s.unknown_rank() && s.rank() > 2) {
      return absl::UnimplementedError(absl::StrCat("rank ", s.rank(), " > 2"));
    }
    return absl::OkStatus();
  };
  r->Register(std::move(def));
  return r;
}

TEST(KernelCreationTest, MissingAttributeFailsAtCreationNamingIt) {
  // Softmax's CPU kernel made for a node without "axis" (a Relu): the
  // factory fails; no kernel exists whose Compute could fail later.
  auto g = OneOp("Relu", {2, 3});
  ASSERT_NE(g, nullptr);
  const KernelDef* softmax = CpuDef("Softmax");
  ASSERT_NE(softmax, nullptr);
  absl::StatusOr<std::unique_ptr<OpKernel>> k =
      softmax->factory(*g->FindNode("y"));
  EXPECT_EQ(k.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(k.status().message(), HasSubstr("attribute 'axis'"));
}

TEST(KernelCreationTest, EveryCpuKernelWithAttributesParsesThemAtCreation) {
  // Factories of kernels that read attributes fail on a node that has none
  // of them (an Input node, whose only attributes are dtype and shape).
  auto g = OneOp("Identity", {2});
  ASSERT_NE(g, nullptr);
  const Node& input = *g->FindNode("x");
  for (const char* op : {"Cast", "Concat", "Split", "Gather", "LayerNorm",
                         "RMSNorm", "ReduceSum", "Reshape", "Transpose", "Expand",
                         "Slice", "Softmax", "Where", "MaxPool", "AvgPool",
                         "Conv2D", "Add", "MatMul", "Squeeze", "Unsqueeze"}) {
    const KernelDef* def = CpuDef(op);
    ASSERT_NE(def, nullptr) << op;
    absl::StatusOr<std::unique_ptr<OpKernel>> k = def->factory(input);
    EXPECT_FALSE(k.ok()) << op;
    EXPECT_THAT(k.status().message(), HasSubstr("attribute '")) << op;
  }
}

TEST(KernelCreationTest, BadAttributeIsANamedErrorFromCreateNotFromCompute) {
  std::unique_ptr<KernelRegistry> r = RankTwoRegistry();
  auto g = OneOp("Relu", {2, 3}, {{"_scale", IntAttr(-1)}});
  ASSERT_NE(g, nullptr);
  compute_calls = 0;
  absl::StatusOr<std::unique_ptr<OpKernel>> k =
      r->Create(*g->FindNode("y"), DeviceType::kCpu);
  EXPECT_EQ(k.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(k.status().message(), HasSubstr("node 'y' (Relu)"));
  EXPECT_THAT(k.status().message(), HasSubstr("on cpu"));
  EXPECT_THAT(k.status().message(),
              HasSubstr("attribute '_scale' must be > 0, got -1"));
  EXPECT_EQ(compute_calls, 0);

  auto missing = OneOp("Relu", {2, 3});
  ASSERT_NE(missing, nullptr);
  k = r->Create(*missing->FindNode("y"), DeviceType::kCpu);
  EXPECT_EQ(k.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(k.status().message(), HasSubstr("no attribute '_scale'"));

  auto good = OneOp("Relu", {2, 3}, {{"_scale", IntAttr(3)}});
  ASSERT_NE(good, nullptr);
  k = r->Create(*good->FindNode("y"), DeviceType::kCpu);
  EXPECT_TRUE(k.ok()) << k.status();
}

TEST(KernelCapabilityTest, SupportsRefusesUnsupportedShapesWithTheReason) {
  std::unique_ptr<KernelRegistry> r = RankTwoRegistry();
  auto g = OneOp("Relu", {2, 3, 4}, {{"_scale", IntAttr(1)}});
  ASSERT_NE(g, nullptr);
  const Node& y = *g->FindNode("y");
  absl::Status s = r->Supports(y, DeviceType::kCpu);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(s.message(), HasSubstr("the cpu kernel for Relu cannot run it"));
  EXPECT_THAT(s.message(), HasSubstr("rank 3 > 2"));
  EXPECT_FALSE(r->Has(y, DeviceType::kCpu));
  // Create, and the factory a plan calls after Find, refuse it too.
  absl::StatusOr<std::unique_ptr<OpKernel>> k = r->Create(y, DeviceType::kCpu);
  EXPECT_EQ(k.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(k.status().message(), HasSubstr("node 'y' (Relu)"));
  EXPECT_THAT(k.status().message(), HasSubstr("rank 3 > 2"));
  absl::StatusOr<const KernelDef*> def = r->Find(y, DeviceType::kCpu);
  ASSERT_TRUE(def.ok()) << def.status();
  EXPECT_THAT((*def)->factory(y).status().message(), HasSubstr("rank 3 > 2"));
}

TEST(KernelCapabilityTest, SupportsAcceptsShapesItCanRunAndUnknownRanks) {
  std::unique_ptr<KernelRegistry> r = RankTwoRegistry();
  for (const Shape& shape : {Shape({2, 3}), Shape({-1, -1}), Shape::UnknownRank()}) {
    auto g = OneOp("Relu", shape, {{"_scale", IntAttr(1)}});
    ASSERT_NE(g, nullptr);
    EXPECT_TRUE(r->Supports(*g->FindNode("y"), DeviceType::kCpu).ok())
        << shape.DebugString();
  }
}

TEST(KernelCapabilityTest, NoKernelForTheDtypesOrDeviceIsNotFound) {
  std::unique_ptr<KernelRegistry> r = RankTwoRegistry();
  auto g = OneOp("Relu", {2}, {{"_scale", IntAttr(1)}}, DT_INT32);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(r->Supports(*g->FindNode("y"), DeviceType::kCpu).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(r->Supports(*g->FindNode("y"), DeviceType::kGpu).code(),
            absl::StatusCode::kNotFound);
}

TEST(KernelCapabilityTest, CapabilityQueryAsksTheGlobalRegistry) {
  auto g = OneOp("Relu", {2, 3});
  ASSERT_NE(g, nullptr);
  auto query = KernelCapabilityQuery();
  EXPECT_TRUE(query(*g->FindNode("y"), DeviceType::kCpu).ok());
  EXPECT_EQ(query(*g->FindNode("y"), DeviceType::kGpu).ok(),
            KernelRegistry::Global()->Has(*g->FindNode("y"), DeviceType::kGpu));
}

bool HasGpuKernel(const std::string& op) {
  for (const KernelDef* def : KernelRegistry::Global()->KernelsFor(op)) {
    if (def->device == DeviceType::kGpu) return true;
  }
  return false;
}

TEST(KernelCapabilityTest, CudaKernelsRefuseMoreDimensionsThanTheyIndex) {
  // Registration needs no GPU: this runs in every CUDA build.
  if (!HasGpuKernel("Transpose")) GTEST_SKIP() << "no CUDA kernels in this build";
  auto deep = OneOp("Transpose", Shape({1, 2, 1, 2, 1, 2, 1, 2, 3}));
  ASSERT_NE(deep, nullptr);
  absl::Status s =
      KernelRegistry::Global()->Supports(*deep->FindNode("y"), DeviceType::kGpu);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(s.message(), HasSubstr("the gpu kernel for Transpose"));
  EXPECT_THAT(s.message(), HasSubstr("rank 9 > 8"));
  EXPECT_TRUE(
      KernelRegistry::Global()->Supports(*deep->FindNode("y"), DeviceType::kCpu).ok());
  auto shallow = OneOp("Transpose", Shape({2, 3, 4}));
  ASSERT_NE(shallow, nullptr);
  EXPECT_TRUE(KernelRegistry::Global()
                  ->Supports(*shallow->FindNode("y"), DeviceType::kGpu)
                  .ok());
}

TEST(KernelCapabilityTest, CudaMatMulRefusesSizesCublasCannotTake) {
  if (!HasGpuKernel("MatMul")) GTEST_SKIP() << "no CUDA kernels in this build";
  GraphDef def;
  for (const char* name : {"a", "b"}) {
    NodeDef* in = def.add_node();
    in->set_name(name);
    in->set_op("Input");
    (*in->mutable_attr())["dtype"] = TypeAttr(DT_FLOAT);
    AttrValue s;
    *s.mutable_shape() = ShapeToProto(
        name[0] == 'a' ? Shape({4, int64_t{1} << 32}) : Shape({int64_t{1} << 32, 4}));
    (*in->mutable_attr())["shape"] = s;
  }
  NodeDef* mm = def.add_node();
  mm->set_name("mm");
  mm->set_op("MatMul");
  mm->add_input("a");
  mm->add_input("b");
  absl::StatusOr<std::unique_ptr<const Graph>> g = BuildGraph(def);
  ASSERT_TRUE(g.ok()) << g.status();
  absl::Status s =
      KernelRegistry::Global()->Supports(*(*g)->FindNode("mm"), DeviceType::kGpu);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(s.message(), HasSubstr("k = 4294967296"));
}

}  // namespace
}  // namespace sluice::testing::capability_test
