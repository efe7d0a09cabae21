// Tests for TensorFromProto / TensorToProto: every data source, splats, and
// every malformed tensor.
#include "core/tensor_proto.h"

#include <cstring>
#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_data.h"

namespace sluice::tensor_proto_test {
namespace {

using ::testing::HasSubstr;

TensorProto Proto(DataType dtype, std::initializer_list<int64_t> dims) {
  TensorProto p;
  p.set_dtype(dtype);
  for (int64_t d : dims) p.mutable_shape()->add_dim(d);
  return p;
}

void ExpectInvalid(const TensorProto& p, const std::string& substr,
                   const std::string& base_dir = "") {
  absl::StatusOr<Tensor> t = TensorFromProto(p, base_dir);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(t.status().message(), HasSubstr(substr));
}

// A folder holding a 16-byte weights file, one per test: CTest runs the
// tests as parallel processes, and a shared file rewritten by one test was
// read empty by another (CI, 2026-12-01).
std::string WeightsDir() {
  std::filesystem::path dir =
      TestScratchDir() /
      (std::string("tensor_proto_") +
       ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::create_directories(dir / "sub");
  std::ofstream out(dir / "w.bin", std::ios::binary);
  float v[4] = {1, 2, 3, 4};
  out.write(reinterpret_cast<const char*>(v), sizeof(v));
  return dir.string();
}

TEST(TensorProtoTest, FloatValuesFillFloatTypes) {
  TensorProto p = Proto(DT_FLOAT, {3});
  p.add_float_val(1.5f);
  p.add_float_val(-2);
  p.add_float_val(3);
  Tensor t = *TensorFromProto(p);
  EXPECT_EQ(t.flat<float>()[1], -2.0f);
  p.set_dtype(DT_FLOAT16);
  EXPECT_EQ(static_cast<float>(TensorFromProto(p)->flat<half>()[0]), 1.5f);
  p.set_dtype(DT_BFLOAT16);
  EXPECT_EQ(static_cast<float>(TensorFromProto(p)->flat<bfloat16>()[2]), 3.0f);
}

TEST(TensorProtoTest, SingleValueIsASplat) {
  TensorProto p = Proto(DT_INT32, {2, 3});
  p.add_int_val(7);
  Tensor t = *TensorFromProto(p);
  for (int32_t v : t.flat<int32_t>()) EXPECT_EQ(v, 7);
}

TEST(TensorProtoTest, IntValuesFillIntsAndBoolsWithRangeChecks) {
  TensorProto p = Proto(DT_BOOL, {2});
  p.add_int_val(1);
  p.add_int_val(0);
  Tensor t = *TensorFromProto(p);
  EXPECT_TRUE(t.flat<bool>()[0]);
  EXPECT_FALSE(t.flat<bool>()[1]);
  p.set_int_val(0, 2);
  ExpectInvalid(p, "bool value 2 is not 0 or 1");
  p = Proto(DT_INT8, {1});
  p.add_int_val(300);
  ExpectInvalid(p, "value 300 is out of range for int8");
  p = Proto(DT_UINT8, {1});
  p.add_int_val(-1);
  ExpectInvalid(p, "out of range for uint8");
}

TEST(TensorProtoTest, DoubleValuesFillFloat64) {
  TensorProto p = Proto(DT_DOUBLE, {2});
  p.add_double_val(0.25);
  p.add_double_val(1e300);
  EXPECT_EQ(TensorFromProto(p)->flat<double>()[1], 1e300);
}

TEST(TensorProtoTest, ListMustSuitTheDtype) {
  TensorProto p = Proto(DT_FLOAT, {1});
  p.add_int_val(1);
  ExpectInvalid(p, "stores its values in int_val; use float_val");
  p = Proto(DT_DOUBLE, {1});
  p.add_float_val(1);
  ExpectInvalid(p, "use double_val");
}

TEST(TensorProtoTest, ContentRoundTrips) {
  Tensor t = Tensor::FromVector<int64_t>({1, -2, 3}, Shape({3}));
  TensorProto p = TensorToProto(t);
  EXPECT_EQ(p.content().size(), 24u);
  absl::StatusOr<Tensor> back = TensorFromProto(p);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(TensorsEqual(t, *back));
}

TEST(TensorProtoTest, ClearTensorDataKeepsTheDescriptionAndDropsTheBytes) {
  TensorProto p = TensorToProto(
      Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, Shape({2, 3})));
  p.add_float_val(1);  // every data field goes, whichever is used
  p.mutable_external()->set_path("w.bin");
  ClearTensorData(&p);
  EXPECT_TRUE(p.content().empty());
  EXPECT_EQ(p.float_val_size(), 0);
  EXPECT_EQ(p.dtype(), DT_FLOAT);
  EXPECT_EQ(p.shape().dim_size(), 2);
  EXPECT_EQ(p.external().path(), "w.bin");
  // What is left describes the tensor but cannot remake it.
  TensorProto inline_only = TensorToProto(Tensor::FromVector<int64_t>(
      {1, 2, 3}, Shape({3})));
  ClearTensorData(&inline_only);
  ExpectInvalid(inline_only, "has 3 elements but no data");
}

TEST(TensorProtoTest, DescriptionProtoIsTheProtoWithoutItsBytes) {
  Tensor t = Tensor::FromVector<float>({1, 2, 3, 4}, Shape({4}));
  TensorProto full = TensorToProto(t);
  ClearTensorData(&full);
  EXPECT_EQ(TensorDescriptionProto(t).SerializeAsString(),
            full.SerializeAsString());
}

TEST(TensorProtoTest, RejectsDataLengthMismatch) {
  TensorProto p = Proto(DT_FLOAT, {2, 2});
  p.set_content(std::string(15, '\0'));
  ExpectInvalid(p, "15 bytes of content, expected 16 (4 elements x 4 bytes)");
  p = Proto(DT_FLOAT, {4});
  p.add_float_val(1);
  p.add_float_val(2);
  ExpectInvalid(p, "has 2 values in float_val for 4 elements");
}

TEST(TensorProtoTest, RejectsBoolContentOtherThanZeroOrOne) {
  TensorProto p = Proto(DT_BOOL, {2});
  p.set_content(std::string("\x01\x05", 2));
  ExpectInvalid(p, "not 0 or 1");
}

TEST(TensorProtoTest, RejectsSeveralSourcesOrNone) {
  TensorProto p = Proto(DT_FLOAT, {1});
  p.add_float_val(1);
  p.set_content(std::string(4, '\0'));
  ExpectInvalid(p, "exactly one is allowed");
  ExpectInvalid(Proto(DT_FLOAT, {2}), "has 2 elements but no data");
  EXPECT_EQ(TensorFromProto(Proto(DT_FLOAT, {0, 3}))->NumElements(), 0);
}

TEST(TensorProtoTest, RejectsBadDtypeAndShapes) {
  TensorProto p = Proto(DT_INVALID, {1});
  p.add_float_val(1);
  ExpectInvalid(p, "invalid dtype");
  p = Proto(DT_FLOAT, {int64_t{1} << 62});
  p.add_float_val(1);
  ExpectInvalid(p, "more than 2^48 elements");
  p = Proto(DT_FLOAT, {-1});
  p.add_float_val(1);
  ExpectInvalid(p, "must be fully defined");
  p = Proto(DT_FLOAT, {2, -4});
  p.add_float_val(1);
  ExpectInvalid(p, "negative dimension -4");
}

TEST(TensorProtoTest, LimitsSplatSize) {
  TensorProto p = Proto(DT_FLOAT, {int64_t{1} << 40});
  p.add_float_val(0);
  ExpectInvalid(p, "splats are limited");
}

TEST(TensorProtoTest, IsSplatIsOneValueForMoreThanOneElement) {
  TensorProto p = Proto(DT_FLOAT, {2, 3});
  p.add_float_val(1);
  EXPECT_TRUE(IsSplat(p));
  EXPECT_FALSE(IsSplat(Proto(DT_FLOAT, {2, 3})));  // no data
  TensorProto scalar = Proto(DT_FLOAT, {1, 1});
  scalar.add_float_val(1);
  EXPECT_FALSE(IsSplat(scalar));
  TensorProto empty = Proto(DT_FLOAT, {0, 5});
  empty.add_float_val(1);
  EXPECT_FALSE(IsSplat(empty));
  p.add_float_val(2);
  EXPECT_FALSE(IsSplat(p));
}

TEST(TensorProtoTest, SplatValueChecksWithoutMakingTheTensor) {
  // 1 GiB described by one value: SplatValue makes one element.
  TensorProto p = Proto(DT_INT32, {int64_t{1} << 28});
  p.add_int_val(-7);
  absl::StatusOr<Tensor> one = SplatValue(p);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->shape(), Shape());
  EXPECT_EQ(one->dtype(), DT_INT32);
  EXPECT_EQ(one->flat<int32_t>()[0], -7);
  // The same checks as TensorFromProto.
  p.set_int_val(0, int64_t{1} << 40);
  EXPECT_THAT(SplatValue(p).status().message(), HasSubstr("out of range"));
  p = Proto(DT_FLOAT, {int64_t{1} << 40});
  p.add_float_val(0);
  EXPECT_THAT(SplatValue(p).status().message(), HasSubstr("splats are limited"));
  p = Proto(DT_BOOL, {4});
  p.add_int_val(2);
  EXPECT_THAT(SplatValue(p).status().message(), HasSubstr("not 0 or 1"));
  p = Proto(DT_FLOAT, {4});
  p.add_float_val(1);
  p.add_float_val(2);
  p.add_float_val(3);
  p.add_float_val(4);
  EXPECT_THAT(SplatValue(p).status().message(), HasSubstr("not a splat"));
}

TEST(TensorProtoTest, SplatFillsEveryElementOfEveryWidth) {
  for (DataType dtype : {DT_INT8, DT_FLOAT16, DT_FLOAT, DT_INT64, DT_BOOL}) {
    TensorProto p = Proto(dtype, {3, 7});
    if (IsFloatingPoint(dtype)) {
      p.add_float_val(1);
    } else {
      p.add_int_val(1);
    }
    Tensor t = *TensorFromProto(p);
    absl::StatusOr<Tensor> one = SplatValue(p);
    ASSERT_TRUE(one.ok()) << one.status();
    const size_t elem = DataTypeSize(dtype);
    for (int64_t i = 0; i < t.NumElements(); ++i) {
      EXPECT_EQ(std::memcmp(static_cast<const char*>(t.raw_data()) + i * elem,
                            one->raw_data(), elem), 0)
          << DataTypeName(dtype) << " element " << i;
    }
  }
}

TEST(TensorProtoTest, ReadsExternalDataRange) {
  std::string dir = WeightsDir();
  TensorProto p = Proto(DT_FLOAT, {2});
  p.mutable_external()->set_path("w.bin");
  p.mutable_external()->set_offset(8);
  p.mutable_external()->set_length(8);
  absl::StatusOr<Tensor> t = TensorFromProto(p, dir);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->flat<float>()[0], 3.0f);
  EXPECT_EQ(t->flat<float>()[1], 4.0f);
  // A path that goes down and back up stays inside.
  p.mutable_external()->set_path("sub/../w.bin");
  EXPECT_TRUE(TensorFromProto(p, dir).ok());
}

TEST(TensorProtoTest, RejectsExternalPathsOutsideTheFolder) {
  std::string dir = WeightsDir();
  TensorProto p = Proto(DT_FLOAT, {2});
  p.mutable_external()->set_length(8);
  p.mutable_external()->set_path(
      "../" + std::filesystem::path(dir).filename().string() + "/w.bin");
  ExpectInvalid(p, "leaves the model folder", dir);
  p.mutable_external()->set_path("sub/../../x.bin");
  ExpectInvalid(p, "leaves the model folder", dir);
  p.mutable_external()->set_path(dir + "/w.bin");
  ExpectInvalid(p, "must be relative", dir);
  p.mutable_external()->set_path("w.bin");
  ExpectInvalid(p, "needs a model folder", "");
  p.mutable_external()->set_path("");
  ExpectInvalid(p, "empty path", dir);
}

TEST(TensorProtoTest, RejectsExternalRangesPastTheFile) {
  std::string dir = WeightsDir();
  TensorProto p = Proto(DT_FLOAT, {2});
  p.mutable_external()->set_path("w.bin");
  p.mutable_external()->set_offset(12);
  p.mutable_external()->set_length(8);
  absl::StatusOr<Tensor> t = TensorFromProto(p, dir);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(t.status().message(), HasSubstr("runs past the end of the file"));
  p.mutable_external()->set_offset(INT64_MAX);
  EXPECT_EQ(TensorFromProto(p, dir).status().code(),
            absl::StatusCode::kOutOfRange);
  p.mutable_external()->set_offset(-1);
  ExpectInvalid(p, "negative offset", dir);
  p.mutable_external()->set_offset(0);
  p.mutable_external()->set_length(4);
  ExpectInvalid(p, "has length 4, expected 8", dir);
  p.mutable_external()->set_length(8);
  p.mutable_external()->set_path("missing.bin");
  EXPECT_EQ(TensorFromProto(p, dir).status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace sluice::tensor_proto_test
