// TensorFromOnnx and DataTypeFromOnnx for the dtypes beyond the original
// nine: 16-bit and unsigned integers, float8 bit patterns, and the packed
// sub-byte types (two 4-bit or four 2-bit values a byte, low bits first),
// which become one byte per element.
#include "onnx/onnx_tensor.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::onnx_tensor_test {
namespace {

using ::testing::HasSubstr;

onnx::TensorProto Proto(int32_t type, std::vector<int64_t> dims) {
  onnx::TensorProto p;
  p.set_name("t");
  p.set_data_type(type);
  for (int64_t d : dims) p.add_dims(d);
  return p;
}

std::vector<int> Bytes(const Tensor& t) {
  const auto* p = static_cast<const int8_t*>(t.raw_data());
  return std::vector<int>(p, p + t.NumElements());
}

TEST(OnnxTensorTest, MapsTheNewElementTypes) {
  EXPECT_EQ(*DataTypeFromOnnx(onnx::TensorProto::UINT16), DT_UINT16);
  EXPECT_EQ(*DataTypeFromOnnx(onnx::TensorProto::INT16), DT_INT16);
  EXPECT_EQ(*DataTypeFromOnnx(onnx::TensorProto::UINT64), DT_UINT64);
  EXPECT_EQ(*DataTypeFromOnnx(kOnnxFLOAT8E4M3FN), DT_FLOAT8_E4M3FN);
  EXPECT_EQ(*DataTypeFromOnnx(kOnnxFLOAT8E8M0), DT_FLOAT8_E8M0);
  EXPECT_EQ(*DataTypeFromOnnx(kOnnxINT4), DT_INT4);
  EXPECT_EQ(*DataTypeFromOnnx(kOnnxUINT2), DT_UINT2);
  EXPECT_EQ(OnnxTypeName(kOnnxFLOAT4E2M1), "FLOAT4E2M1");
  absl::StatusOr<DataType> complex =
      DataTypeFromOnnx(onnx::TensorProto::COMPLEX64);
  EXPECT_THAT(complex.status().message(), HasSubstr("COMPLEX64"));
}

TEST(OnnxTensorTest, UnpacksInt4RawData) {
  // 5 values -8, 7, -1, 0, 3: bytes 0x78 (7 high, -8 = 0x8 low), 0x0F, 0x03.
  onnx::TensorProto p = Proto(kOnnxINT4, {5});
  p.set_raw_data(std::string("\x78\x0f\x03", 3));
  absl::StatusOr<Tensor> t = TensorFromOnnx(p, "");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype(), DT_INT4);
  EXPECT_EQ(Bytes(*t), (std::vector<int>{-8, 7, -1, 0, 3}));
}

TEST(OnnxTensorTest, UnpacksUint2AndPackedInt32Data) {
  // uint2 0, 1, 2, 3, 1: 0b11100100 = 0xE4, then 0x01.
  onnx::TensorProto p = Proto(kOnnxUINT2, {5});
  p.set_raw_data(std::string("\xe4\x01", 2));
  absl::StatusOr<Tensor> t = TensorFromOnnx(p, "");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(Bytes(*t), (std::vector<int>{0, 1, 2, 3, 1}));
  // uint4 in int32_data: one packed byte per int32.
  onnx::TensorProto q = Proto(kOnnxUINT4, {3});
  q.add_int32_data(0xF2);
  q.add_int32_data(0x09);
  t = TensorFromOnnx(q, "");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->data<uint8_t>()[0], 2);
  EXPECT_EQ(t->data<uint8_t>()[1], 15);
  EXPECT_EQ(t->data<uint8_t>()[2], 9);
}

TEST(OnnxTensorTest, PackedSizeIsChecked) {
  onnx::TensorProto p = Proto(kOnnxINT4, {5});
  p.set_raw_data(std::string("\x00\x00", 2));  // needs 3 bytes
  absl::StatusOr<Tensor> t = TensorFromOnnx(p, "");
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(),
              HasSubstr("raw_data holds 2 bytes, the tensor needs 3"));
}

TEST(OnnxTensorTest, Float8AndWideIntegers) {
  onnx::TensorProto f8 = Proto(kOnnxFLOAT8E4M3FN, {2});
  f8.set_raw_data(std::string("\x38\xc0", 2));  // 1.0, -2.0
  absl::StatusOr<Tensor> t = TensorFromOnnx(f8, "");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(static_cast<float>(t->data<float8_e4m3fn>()[1]), -2.0f);
  onnx::TensorProto u32 = Proto(onnx::TensorProto::UINT32, {2});
  u32.add_uint64_data(4000000000u);
  u32.add_uint64_data(7);
  t = TensorFromOnnx(u32, "");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->data<uint32_t>()[0], 4000000000u);
  onnx::TensorProto i16 = Proto(onnx::TensorProto::INT16, {1});
  i16.add_int32_data(-300);
  t = TensorFromOnnx(i16, "");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->data<int16_t>()[0], -300);
}

// Found by onnx_fuzz (docs/fuzzing.md): an initializer whose dims claim far
// more than its data holds was allocated before its data was checked (4 TiB
// here: an allocation failure in a Release build, an abort under ASan, and
// a multi-gigabyte allocation for claims the machine can just satisfy).
// The data is checked against the shape first now, for every encoding.
constexpr int64_t kHuge = int64_t{1} << 40;  // elements: 4 TiB of float

TEST(OnnxTensorTest, RawDataShorterThanTheShapeIsAnErrorBeforeAllocating) {
  onnx::TensorProto p = Proto(onnx::TensorProto::FLOAT, {kHuge});
  p.set_raw_data(std::string(4, '\0'));
  absl::StatusOr<Tensor> t = TensorFromOnnx(p, "");
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(t.status().message(), HasSubstr("raw_data holds 4 bytes"));
}

TEST(OnnxTensorTest, TypedDataShorterThanTheShapeIsAnErrorBeforeAllocating) {
  onnx::TensorProto p = Proto(onnx::TensorProto::FLOAT, {kHuge});
  p.add_float_data(1.0f);
  absl::StatusOr<Tensor> t = TensorFromOnnx(p, "");
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(t.status().message(), HasSubstr("float_data holds 1 values"));

  onnx::TensorProto packed = Proto(kOnnxINT4, {kHuge});
  packed.add_int32_data(0x12);
  t = TensorFromOnnx(packed, "");
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(t.status().message(), HasSubstr("holds 1 packed bytes"));
}

TEST(OnnxTensorTest, ExternalDataShorterThanTheShapeIsAnErrorBeforeAllocating) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "sluice_onnx_tensor_test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "w.bin", std::ios::binary) << std::string(4, '\0');
  onnx::TensorProto p = Proto(onnx::TensorProto::FLOAT, {kHuge});
  p.set_data_location(onnx::TensorProto::EXTERNAL);
  auto* entry = p.add_external_data();
  entry->set_key("location");
  entry->set_value("w.bin");
  absl::StatusOr<Tensor> t = TensorFromOnnx(p, dir.string());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(t.status().message(), HasSubstr("external data holds 4 bytes"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sluice::onnx_tensor_test
