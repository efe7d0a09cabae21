// ONNX TensorProto files (onnx/tensor_file.h): what `sluice run` reads for
// `--input NAME=FILE.pb` and writes beside NAME.npy, round-tripped for the
// dtypes .npy cannot hold, sub-byte packing included.
#include "onnx/tensor_file.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::tensor_file_test {
namespace {

std::string TempPath(const std::string& name) {
  return absl::StrCat(::testing::TempDir(), "/sluice_tensor_file_", name);
}

TEST(OnnxTensorFileTest, RoundTripsDtypesNpyCannotHold) {
  // One byte per element in sluice: int4 sign-extended, uint2 zero-extended.
  const std::vector<int8_t> int4 = {-8, -1, 0, 3, 7};
  const std::vector<uint8_t> uint2 = {0, 1, 2, 3, 3, 0, 1};
  struct Case {
    DataType dtype;
    std::vector<uint8_t> bytes;
  };
  std::vector<Case> cases = {
      {DT_INT4, std::vector<uint8_t>(int4.begin(), int4.end())},
      {DT_UINT2, uint2},
      {DT_FLOAT8_E4M3FN, {0x38, 0xb8, 0x7e, 0x01}},  // 1, -1, 448, tiny
      {DT_BFLOAT16, {0xc0, 0x3f, 0x00, 0xc0}},        // 1.5, -2
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(DataTypeName(c.dtype));
    const int64_t n = static_cast<int64_t>(c.bytes.size()) /
                      (DataTypeBits(c.dtype) >= 8 ? DataTypeSize(c.dtype) : 1);
    absl::StatusOr<Tensor> t = Tensor::Create(c.dtype, Shape({n}));
    ASSERT_TRUE(t.ok()) << t.status();
    std::memcpy(t->raw_data(), c.bytes.data(), c.bytes.size());
    const std::string path =
        TempPath(absl::StrCat(DataTypeName(c.dtype), ".pb"));
    absl::Status w = WriteOnnxTensorFile(*t, "v", path);
    ASSERT_TRUE(w.ok()) << w;
    absl::StatusOr<Tensor> back = ReadOnnxTensorFile(path);
    std::remove(path.c_str());
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->dtype(), c.dtype);
    ASSERT_EQ(back->shape(), Shape({n}));
    EXPECT_EQ(std::memcmp(back->raw_data(), c.bytes.data(), c.bytes.size()), 0);
  }
}

TEST(OnnxTensorFileTest, MissingOrForeignFilesAreErrorsNamingThem) {
  absl::StatusOr<Tensor> t = ReadOnnxTensorFile(TempPath("absent.pb"));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(t.status().message(), ::testing::HasSubstr("absent.pb"));
  EXPECT_FALSE(ReadOnnxTensorFile(::testing::TempDir()).ok());  // a folder
}

}  // namespace
}  // namespace sluice::tensor_file_test
