// The CudaKernel op's schema and shape function, and its launch rule
// (graph/cuda_kernel_spec.h): all checked when the graph is built, on any
// machine.
#include "graph/cuda_kernel_spec.h"

#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util.h"

namespace sluice::cuda_kernel_spec_test {
namespace {

using ::sluice::testing_util::InferOp;
using ::sluice::testing_util::TypedShape;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

using AttrList = std::map<std::string, AttrValue>;

// A CudaKernel over `n` float32 inputs with one float32 output shaped like
// input 0, plus `extra` (which replaces any of these).
AttrList KernelAttrs(int n, const AttrList& extra = {}) {
  AttrList a = {{"Tin", MakeTypeListAttr(std::vector<DataType>(n, DT_FLOAT))},
                {"output_dtypes", MakeTypeListAttr({DT_FLOAT})},
                {"output_shape_like", MakeIntListAttr({0})},
                {"source", MakeStringAttr("extern \"C\" __global__ void k() {}")},
                {"kernel_name", MakeStringAttr("k")}};
  for (const auto& [k, v] : extra) a[k] = v;
  return a;
}

std::vector<TypedShape> Floats(const std::vector<Shape>& shapes) {
  std::vector<TypedShape> out;
  for (const Shape& s : shapes) out.push_back({DT_FLOAT, s});
  return out;
}

// The spec of a built node's attributes (defaults filled in).
absl::StatusOr<CudaKernelSpec> Spec(const AttrList& attrs, int num_inputs) {
  AttrList all = {{"output_shapes", MakeShapeListAttr({})},
                  {"output_shape_like", MakeIntListAttr({})},
                  {"block", MakeIntListAttr({256})},
                  {"grid", MakeIntListAttr({})},
                  {"grid_from_output", MakeIntAttr(0)},
                  {"shared_memory_bytes", MakeIntAttr(0)},
                  {"options", MakeStringListAttr({})}};
  for (const auto& [k, v] : attrs) all[k] = v;
  std::map<std::string, AttrValue, std::less<>> values(all.begin(), all.end());
  return ParseCudaKernelSpec(AttrMap(values), num_inputs);
}

TEST(CudaKernelShapeTest, OutputsTakeAnInputsShapeOrAFixedOne) {
  auto out = InferOp(
      "CudaKernel", Floats({Shape({-1, 8}), Shape({3})}),
      KernelAttrs(2, {{"output_dtypes", MakeTypeListAttr({DT_FLOAT, DT_INT64})},
                      {"output_shape_like", MakeIntListAttr({0, -1})},
                      {"output_shapes", MakeShapeListAttr({Shape(), Shape({2, 5})})}}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(*out, ElementsAre(Shape({-1, 8}), Shape({2, 5})));
}

TEST(CudaKernelShapeTest, NoInputsAndFixedShapesBuild) {
  auto out = InferOp("CudaKernel", {},
                     KernelAttrs(0, {{"output_shape_like", MakeIntListAttr({})},
                                     {"output_shapes",
                                      MakeShapeListAttr({Shape({4})})}}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(*out, ElementsAre(Shape({4})));
}

TEST(CudaKernelShapeTest, TinMustListTheInputs) {
  auto out = InferOp("CudaKernel", Floats({Shape({2})}),
                     KernelAttrs(1, {{"Tin", MakeTypeListAttr({DT_INT32})}}));
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("Tin"));
}

TEST(CudaKernelShapeTest, AnOutputWithoutAShapeRuleIsAnError) {
  auto out = InferOp("CudaKernel", Floats({Shape({2})}),
                     KernelAttrs(1, {{"output_shape_like", MakeIntListAttr({})}}));
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("output 0 has no shape"));
  EXPECT_THAT(out.status().message(), HasSubstr("'op'"));
}

TEST(CudaKernelShapeTest, BadAttributesAreErrorsNamingThem) {
  struct Case {
    AttrList attrs;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{{"output_shape_like", MakeIntListAttr({3})}}, "output_shape_like[0] = 3"},
      {{{"output_shape_like", MakeIntListAttr({0, 0})}}, "2 entries for 1 outputs"},
      {{{"output_shape_like", MakeIntListAttr({-1})},
        {"output_shapes", MakeShapeListAttr({Shape({-1})})}},
       "not fully defined"},
      {{{"source", MakeStringAttr("")}}, "source is empty"},
      {{{"kernel_name", MakeStringAttr("")}}, "kernel_name is empty"},
      {{{"output_dtypes", MakeTypeListAttr({})}}, "at least one output"},
      {{{"block", MakeIntListAttr({2048})}}, "block[0] = 2048"},
      {{{"block", MakeIntListAttr({64, 64})}}, "4096 threads"},
      {{{"block", MakeIntListAttr({1, 1, 1, 1})}}, "1 to 3"},
      {{{"grid", MakeIntListAttr({0})}}, "grid[0] = 0"},
      {{{"grid_from_output", MakeIntAttr(1)}}, "grid_from_output = 1"},
      {{{"shared_memory_bytes", MakeIntAttr(1 << 20)}}, "shared_memory_bytes"},
      {{{"options", MakeStringListAttr({"-arch=sm_80"})}}, "sets the architecture"},
      {{{"options", MakeStringListAttr({"--gpu-architecture=compute_90"})}},
       "sets the architecture"},
  };
  for (const Case& c : cases) {
    auto out = InferOp("CudaKernel", Floats({Shape({2})}), KernelAttrs(1, c.attrs));
    ASSERT_FALSE(out.ok()) << c.message;
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_THAT(out.status().message(), HasSubstr(c.message));
  }
}

TEST(CudaKernelLaunchTest, ADerivedGridCoversEveryElementOfTheOutput) {
  auto spec = Spec(KernelAttrs(1, {{"block", MakeIntListAttr({128})}}), 1);
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto launch = spec->Launch({Shape({10, 100})});
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_EQ(launch->element_count, 1000);
  EXPECT_THAT(launch->grid, ElementsAre(8, 1, 1));  // ceil(1000 / 128)
  EXPECT_THAT(launch->block, ElementsAre(128, 1, 1));
  EXPECT_FALSE(launch->empty());
}

TEST(CudaKernelLaunchTest, ABlockOfSeveralDimensionsCountsAllItsThreads) {
  auto spec = Spec(KernelAttrs(1, {{"block", MakeIntListAttr({16, 16})}}), 1);
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto launch = spec->Launch({Shape({513})});
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_THAT(launch->grid, ElementsAre(3, 1, 1));  // ceil(513 / 256)
  EXPECT_THAT(launch->block, ElementsAre(16, 16, 1));
}

TEST(CudaKernelLaunchTest, AnExplicitGridIsTakenAsItIs) {
  auto spec = Spec(KernelAttrs(1, {{"grid", MakeIntListAttr({4, 2})},
                                   {"shared_memory_bytes", MakeIntAttr(1024)}}),
                   1);
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto launch = spec->Launch({Shape({7})});
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_THAT(launch->grid, ElementsAre(4, 2, 1));
  EXPECT_EQ(launch->element_count, 7);
  EXPECT_EQ(launch->shared_memory_bytes, 1024);
}

TEST(CudaKernelLaunchTest, AnEmptyOutputLaunchesNothing) {
  auto spec = Spec(KernelAttrs(1), 1);
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto launch = spec->Launch({Shape({0, 4})});
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_TRUE(launch->empty());
}

TEST(CudaKernelLaunchTest, TooManyElementsForADerivedGridIsAnError) {
  auto spec = Spec(KernelAttrs(1, {{"block", MakeIntListAttr({1})}}), 1);
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto launch = spec->Launch({Shape({int64_t{1} << 32})});
  ASSERT_FALSE(launch.ok());
  EXPECT_THAT(launch.status().message(), HasSubstr("explicit grid"));
}

TEST(CudaKernelLaunchTest, OutputShapesFollowTheRunTimeInputs) {
  auto spec = Spec(KernelAttrs(2, {{"output_dtypes",
                                    MakeTypeListAttr({DT_FLOAT, DT_FLOAT})},
                                   {"output_shape_like", MakeIntListAttr({1, -1})},
                                   {"output_shapes",
                                    MakeShapeListAttr({Shape(), Shape({3})})}}),
                   2);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(spec->OutputShapes({Shape({2}), Shape({5, 5})}),
              ElementsAre(Shape({5, 5}), Shape({3})));
}

}  // namespace
}  // namespace sluice::cuda_kernel_spec_test
