// Tests for Tensor basics.
#include "core/tensor.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::tensor_test {
namespace {

TEST(TensorTest, CreateChecksShapeAndDtype) {
  absl::StatusOr<Tensor> t = Tensor::Create(DT_FLOAT, Shape({2, 3}));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->NumElements(), 6);
  EXPECT_EQ(t->bytes(), 24u);
  EXPECT_TRUE(t->on_host());
  EXPECT_FALSE(Tensor::Create(DT_FLOAT, Shape({kUnknownDim})).ok());
  EXPECT_FALSE(Tensor::Create(DT_INVALID, Shape({2})).ok());
  EXPECT_FALSE(Tensor::Create(DT_FLOAT, Shape({int64_t{1} << 50})).ok());
}

TEST(TensorTest, ZerosAndFromVector) {
  Tensor z = *Tensor::Zeros(DT_INT32, Shape({3}));
  for (int32_t v : z.flat<int32_t>()) EXPECT_EQ(v, 0);
  Tensor v = Tensor::FromVector<float>({1, 2, 3, 4}, Shape({2, 2}));
  EXPECT_EQ(v.flat<float>()[3], 4.0f);
  EXPECT_EQ(Tensor::Scalar<int64_t>(7).rank(), 0);
}

TEST(TensorTest, CopiesAndReshapesShareTheBuffer) {
  Tensor a = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, Shape({2, 3}));
  Tensor b = a;
  Tensor c = a.Reshaped(Shape({3, 2}));
  EXPECT_EQ(a.raw_data(), b.raw_data());
  EXPECT_EQ(a.raw_data(), c.raw_data());
  EXPECT_EQ(c.shape(), Shape({3, 2}));
}

TEST(TensorTest, FromBufferWrapsMemoryItDoesNotAllocate) {
  Allocator* cpu = CpuAllocator();
  void* data = *cpu->Allocate(24);
  auto buffer = std::make_shared<Buffer>(cpu, data, 24);
  absl::StatusOr<Tensor> t = Tensor::FromBuffer(DT_FLOAT, Shape({2, 3}), buffer);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->raw_data(), data);
  EXPECT_EQ(t->NumElements(), 6);
  absl::StatusOr<Tensor> big = Tensor::FromBuffer(DT_FLOAT, Shape({7}), buffer);
  EXPECT_EQ(big.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(big.status().message(),
              ::testing::HasSubstr("a buffer of 24 bytes cannot hold float32[7]"));
  EXPECT_FALSE(Tensor::FromBuffer(DT_INVALID, Shape({2}), buffer).ok());
  EXPECT_FALSE(Tensor::FromBuffer(DT_FLOAT, Shape({kUnknownDim}), buffer).ok());
  EXPECT_FALSE(Tensor::FromBuffer(DT_FLOAT, Shape({2}), nullptr).ok());
}

TEST(TensorTest, EqualityComparesDtypeShapeAndBytes) {
  Tensor a = Tensor::FromVector<int32_t>({1, 2}, Shape({2}));
  EXPECT_TRUE(TensorsEqual(a, Tensor::FromVector<int32_t>({1, 2}, Shape({2}))));
  EXPECT_FALSE(TensorsEqual(a, Tensor::FromVector<int32_t>({1, 3}, Shape({2}))));
  EXPECT_FALSE(TensorsEqual(a, Tensor::FromVector<int32_t>({1, 2}, Shape({1, 2}))));
  EXPECT_FALSE(TensorsEqual(a, Tensor::FromVector<int64_t>({1, 2}, Shape({2}))));
}

TEST(TensorTest, DebugStringShowsDtypeShapeAndValues) {
  Tensor a = Tensor::FromVector<float>({1, 2, 3}, Shape({3}));
  EXPECT_EQ(a.DebugString(), "float32[3] {1, 2, 3}");
  EXPECT_EQ(a.DebugString(2), "float32[3] {1, 2, ...}");
  EXPECT_EQ(Tensor().DebugString(), "<invalid tensor>");
}

}  // namespace
}  // namespace sluice::tensor_test
