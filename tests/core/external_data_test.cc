// Tests for ReadExternalTensor: mapped and read ranges give the same bytes,
// which ranges are mapped, reads in several pieces, copy-on-write, and the
// range and file errors in both modes.
#include "core/external_data.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/tensor_proto.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_data.h"

namespace sluice::external_data_test {
namespace {

using ::testing::HasSubstr;

constexpr ExternalDataMode kModes[] = {ExternalDataMode::kMap,
                                       ExternalDataMode::kRead};

// A fresh scratch folder.
std::string ScratchDir(const std::string& name) {
  std::filesystem::path dir = TestScratchDir() / "external_data" / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

// Byte i of every test file: a pattern that differs between neighbouring
// pages and chunks, so a misplaced offset shows.
uint8_t PatternByte(int64_t i) {
  return static_cast<uint8_t>((i * 131 + (i >> 12) * 7 + (i >> 20)) & 0xff);
}

// Writes `bytes` pattern bytes to dir/name and returns the path.
std::string WritePatternFile(const std::string& dir, const std::string& name,
                             int64_t bytes) {
  std::vector<char> data(static_cast<size_t>(bytes));
  for (int64_t i = 0; i < bytes; ++i) {
    data[i] = static_cast<char>(PatternByte(i));
  }
  const std::string path = dir + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  return path;
}

ExternalData Range(const std::string& path, int64_t offset, int64_t length) {
  ExternalData ext;
  ext.set_path(path);
  ext.set_offset(offset);
  ext.set_length(length);
  return ext;
}

// Whether `t` holds the file's bytes [offset, offset + t.bytes()).
void ExpectPatternAt(const Tensor& t, int64_t offset) {
  const uint8_t* p = static_cast<const uint8_t*>(t.raw_data());
  for (size_t i = 0; i < t.bytes(); ++i) {
    if (p[i] != PatternByte(offset + static_cast<int64_t>(i))) {
      ADD_FAILURE() << "byte " << i << " of the tensor differs from byte "
                    << offset + static_cast<int64_t>(i) << " of the file";
      return;
    }
  }
}

TEST(ExternalDataTest, MapsLargeAlignedRangesAndReadsTheRestWithTheSameBytes) {
  const std::string dir = ScratchDir("same_bytes");
  WritePatternFile(dir, "w.bin", 3 << 20);
  // 64-byte aligned but not page aligned: mapped from the page before.
  const int64_t offset = 4096 + 64;
  const Shape shape({512, 1024});  // 2 MiB of float32
  const ExternalData ext = Range("w.bin", offset, 2 << 20);
  absl::StatusOr<Tensor> mapped =
      ReadExternalTensor(ext, dir, DT_FLOAT, shape, ExternalDataMode::kMap);
  absl::StatusOr<Tensor> read =
      ReadExternalTensor(ext, dir, DT_FLOAT, shape, ExternalDataMode::kRead);
  ASSERT_TRUE(mapped.ok()) << mapped.status();
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_TRUE(IsMappedExternalData(*mapped));
  EXPECT_TRUE(mapped->on_host());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(mapped->raw_data()) % kCpuAlignment,
            0u);
  EXPECT_FALSE(IsMappedExternalData(*read));
  EXPECT_EQ(read->allocator(), CpuAllocator());
  EXPECT_EQ(mapped->shape(), shape);
  ExpectPatternAt(*mapped, offset);
  EXPECT_TRUE(TensorsEqual(*mapped, *read));
}

TEST(ExternalDataTest, ReadsSmallAndUnalignedRangesEvenWhenMapping) {
  const std::string dir = ScratchDir("small_unaligned");
  WritePatternFile(dir, "w.bin", 3 << 20);
  // Below kMinMappedExternalBytes.
  absl::StatusOr<Tensor> small = ReadExternalTensor(
      Range("w.bin", 0, 4096), dir, DT_UINT8, Shape({4096}));
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_FALSE(IsMappedExternalData(*small));
  ExpectPatternAt(*small, 0);
  // Large, at an offset that would break the 64-byte alignment of tensors.
  absl::StatusOr<Tensor> unaligned = ReadExternalTensor(
      Range("w.bin", 4100, 2 << 20), dir, DT_UINT8, Shape({2 << 20}));
  ASSERT_TRUE(unaligned.ok()) << unaligned.status();
  EXPECT_FALSE(IsMappedExternalData(*unaligned));
  ExpectPatternAt(*unaligned, 4100);
}

TEST(ExternalDataTest, ReadsARangeLargerThanOneChunkInPieces) {
  const std::string dir = ScratchDir("chunks");
  const int64_t bytes = 2 * kExternalReadChunkBytes + 100;
  const int64_t offset = 3;
  WritePatternFile(dir, "w.bin", offset + bytes + 5);
  absl::StatusOr<Tensor> t =
      ReadExternalTensor(Range("w.bin", offset, bytes), dir, DT_UINT8,
                         Shape({bytes}), ExternalDataMode::kRead);
  ASSERT_TRUE(t.ok()) << t.status();
  ExpectPatternAt(*t, offset);
}

TEST(ExternalDataTest, WritingAMappedTensorLeavesTheFileUnchanged) {
  const std::string dir = ScratchDir("cow");
  const std::string path = WritePatternFile(dir, "w.bin", 1 << 20);
  const ExternalData ext = Range("w.bin", 0, 1 << 20);
  absl::StatusOr<Tensor> t =
      ReadExternalTensor(ext, dir, DT_UINT8, Shape({1 << 20}));
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_TRUE(IsMappedExternalData(*t));
  static_cast<uint8_t*>(t->raw_data())[100] ^= 0xff;
  absl::StatusOr<Tensor> again =
      ReadExternalTensor(ext, dir, DT_UINT8, Shape({1 << 20}));
  ASSERT_TRUE(again.ok()) << again.status();
  ExpectPatternAt(*again, 0);
  std::ifstream in(path, std::ios::binary);
  in.seekg(100);
  EXPECT_EQ(static_cast<uint8_t>(in.get()), PatternByte(100));
}

TEST(ExternalDataTest, AMappedTensorOutlivesItsFileBeingRemoved) {
  const std::string dir = ScratchDir("removed");
  const std::string path = WritePatternFile(dir, "w.bin", 2 << 20);
  absl::StatusOr<Tensor> t = ReadExternalTensor(
      Range("w.bin", 1 << 20, 1 << 20), dir, DT_UINT8, Shape({1 << 20}));
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_TRUE(IsMappedExternalData(*t));
  std::filesystem::remove(path);
  ExpectPatternAt(*t, 1 << 20);
}

TEST(ExternalDataTest, RangePastTheEndOfATruncatedFileFailsInEachMode) {
  const std::string dir = ScratchDir("truncated");
  WritePatternFile(dir, "w.bin", (2 << 20) - 4);  // 4 bytes short
  for (ExternalDataMode mode : kModes) {
    absl::StatusOr<Tensor> t =
        ReadExternalTensor(Range("w.bin", 0, 2 << 20), dir, DT_FLOAT,
                           Shape({512, 1024}), mode);
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().code(), absl::StatusCode::kOutOfRange);
    EXPECT_THAT(t.status().message(),
                HasSubstr("external data 'w.bin' range [0, +2097152) runs "
                          "past the end of the file (2097148 bytes)"));
  }
}

TEST(ExternalDataTest, FileAndRangeErrorsAreTheSameInEachMode) {
  const std::string dir = ScratchDir("errors");
  WritePatternFile(dir, "w.bin", 2 << 20);
  std::filesystem::create_directories(dir + "/folder");
  for (ExternalDataMode mode : kModes) {
    auto read = [&](const ExternalData& ext) {
      return ReadExternalTensor(ext, dir, DT_FLOAT, Shape({512, 1024}), mode)
          .status();
    };
    absl::Status s = read(Range("missing.bin", 0, 2 << 20));
    EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
    EXPECT_THAT(s.message(), HasSubstr("external data file " + dir +
                                       "/missing.bin not found"));
    s = read(Range("folder", 0, 2 << 20));
    EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
    s = read(Range("w.bin", 0, 1 << 20));
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("has length 1048576, expected 2097152"));
    s = read(Range("w.bin", -64, 2 << 20));
    EXPECT_THAT(s.message(), HasSubstr("negative offset or length"));
    s = read(Range("../errors/w.bin", 0, 2 << 20));
    EXPECT_THAT(s.message(), HasSubstr("leaves the model folder"));
    s = read(Range("w.bin", 64, 2 << 20));
    EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange);
  }
}

TEST(ExternalDataTest, MappedBoolTensorsAreStillChecked) {
  const std::string dir = ScratchDir("bool");
  {
    std::vector<char> bytes(1 << 20, 1);
    bytes[12345] = 2;
    std::ofstream out(dir + "/b.bin", std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  TensorProto p;
  p.set_dtype(DT_BOOL);
  p.mutable_shape()->add_dim(1 << 20);
  *p.mutable_external() = Range("b.bin", 0, 1 << 20);
  absl::StatusOr<Tensor> t = TensorFromProto(p, dir);
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(), HasSubstr("bool tensor byte 12345 is 2"));
}

TEST(ExternalDataTest, TensorFromProtoNamesTheTensorInFileErrors) {
  const std::string dir = ScratchDir("named");
  TensorProto p;
  p.set_dtype(DT_FLOAT);
  p.mutable_shape()->add_dim(4);
  *p.mutable_external() = Range("missing.bin", 0, 16);
  absl::StatusOr<Tensor> t = TensorFromProto(p, dir, ExternalDataMode::kRead);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(t.status().message(),
              HasSubstr("float32[4] tensor: external data file"));
}

}  // namespace
}  // namespace sluice::external_data_test
