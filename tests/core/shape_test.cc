// Tests for Shape and its proto form.
#include "core/shape.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::shape_test {
namespace {

using ::testing::HasSubstr;

TEST(ShapeTest, DefaultIsScalarWithOneElement) {
  Shape s;
  EXPECT_EQ(s.rank(), 0);
  EXPECT_TRUE(s.IsFullyDefined());
  EXPECT_EQ(*s.NumElements(), 1);
  EXPECT_EQ(s.DebugString(), "[]");
}

TEST(ShapeTest, DebugStringShowsUnknowns) {
  EXPECT_EQ(Shape({2, kUnknownDim, 3}).DebugString(), "[2,?,3]");
  EXPECT_EQ(Shape::UnknownRank().DebugString(), "<unknown rank>");
}

TEST(ShapeTest, NumElementsRejectsPartialAndHugeShapes) {
  EXPECT_EQ(*Shape({4, 8}).NumElements(), 32);
  EXPECT_EQ(*Shape({0, int64_t{1} << 60}).NumElements(), 0);
  EXPECT_FALSE(Shape({2, kUnknownDim}).NumElements().ok());
  absl::Status s = Shape({int64_t{1} << 30, int64_t{1} << 30}).NumElements()
                       .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("more than 2^48"));
}

TEST(ShapeTest, CompatibilityTreatsUnknownsAsWildcards) {
  EXPECT_TRUE(Shape({2, kUnknownDim}).IsCompatibleWith(Shape({2, 5})));
  EXPECT_FALSE(Shape({2, 3}).IsCompatibleWith(Shape({2, 5})));
  EXPECT_FALSE(Shape({2}).IsCompatibleWith(Shape({2, 1})));
  EXPECT_TRUE(Shape::UnknownRank().IsCompatibleWith(Shape({7})));
}

TEST(ShapeTest, ProtoRoundTrip) {
  for (const Shape& s : {Shape(), Shape({1, kUnknownDim, 3}),
                         Shape::UnknownRank()}) {
    absl::StatusOr<Shape> back = ShapeFromProto(ShapeToProto(s));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, s);
  }
}

TEST(ShapeTest, FromProtoRejectsBadShapes) {
  TensorShapeProto p;
  p.add_dim(-2);
  EXPECT_THAT(ShapeFromProto(p).status().message(),
              HasSubstr("negative dimension -2"));
  p.Clear();
  p.add_dim(-1);
  EXPECT_TRUE(ShapeFromProto(p).ok());
  EXPECT_FALSE(ShapeFromProto(p, /*require_defined=*/true).ok());
  p.Clear();
  for (int i = 0; i < kMaxRank + 1; ++i) p.add_dim(1);
  EXPECT_THAT(ShapeFromProto(p).status().message(), HasSubstr("rank 33"));
  p.Clear();
  p.set_unknown_rank(true);
  p.add_dim(1);
  EXPECT_FALSE(ShapeFromProto(p).ok());
  p.Clear();
  p.add_dim(int64_t{1} << 62);
  EXPECT_THAT(ShapeFromProto(p).status().message(), HasSubstr("2^48"));
}

}  // namespace
}  // namespace sluice::shape_test
