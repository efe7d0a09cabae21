// Tests for core/npy.h. Files are built here from hand-written headers, so
// the tests do not depend on NumPy.
#include "core/npy.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/element_values.h"

namespace sluice::npy_test {
namespace {

using ::testing::HasSubstr;

// A .npy file: magic, version, header length, `dict` padded as NumPy pads
// it, then `data`.
std::string MakeNpy(const std::string& dict, const std::string& data,
                    int major = 1) {
  const size_t length_bytes = major == 1 ? 2 : 4;
  std::string header = dict;
  const size_t unpadded = 8 + length_bytes + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  std::string out("\x93NUMPY", 6);
  out.push_back(static_cast<char>(major));
  out.push_back('\0');
  for (size_t i = 0; i < length_bytes; ++i) {
    out.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xff));
  }
  return out + header + data;
}

template <typename T>
std::string Bytes(const std::vector<T>& values) {
  std::string s(values.size() * sizeof(T), '\0');
  if (!values.empty()) std::memcpy(s.data(), values.data(), s.size());
  return s;
}

void ExpectBad(const std::string& bytes, const std::string& substring) {
  absl::StatusOr<Tensor> t = ParseNpy(bytes, "t.npy");
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument)
      << t.status();
  EXPECT_THAT(std::string(t.status().message()), HasSubstr(substring));
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("t.npy"));
}

TEST(NpyTest, ReadsFloat32Matrix) {
  absl::StatusOr<Tensor> t = ParseNpy(
      MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
              Bytes<float>({1, 2, 3, 4, 5, 6})));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype(), DT_FLOAT);
  EXPECT_EQ(t->shape(), Shape({2, 3}));
  EXPECT_EQ(t->flat<float>()[5], 6.0f);
}

TEST(NpyTest, ReadsEveryDtype) {
  struct Case {
    const char* descr;
    DataType dtype;
    size_t size;
  };
  for (const Case& c : {Case{"<f4", DT_FLOAT, 4}, Case{"<f2", DT_FLOAT16, 2},
                        Case{"<f8", DT_DOUBLE, 8}, Case{"|i1", DT_INT8, 1},
                        Case{"<i4", DT_INT32, 4}, Case{"<i8", DT_INT64, 8},
                        Case{"|u1", DT_UINT8, 1}, Case{"|b1", DT_BOOL, 1}}) {
    absl::StatusOr<Tensor> t = ParseNpy(MakeNpy(
        absl::StrCat("{'descr': '", c.descr,
                     "', 'fortran_order': False, 'shape': (3,), }"),
        std::string(3 * c.size, '\x01')));
    ASSERT_TRUE(t.ok()) << c.descr << ": " << t.status();
    EXPECT_EQ(t->dtype(), c.dtype) << c.descr;
    EXPECT_EQ(t->NumElements(), 3);
  }
}

TEST(NpyTest, ReadsScalarsEmptyArraysAndLaterVersions) {
  absl::StatusOr<Tensor> scalar = ParseNpy(
      MakeNpy("{'descr': '<i8', 'fortran_order': False, 'shape': (), }",
              Bytes<int64_t>({42}), /*major=*/2));
  ASSERT_TRUE(scalar.ok()) << scalar.status();
  EXPECT_EQ(scalar->rank(), 0);
  EXPECT_EQ(scalar->flat<int64_t>()[0], 42);

  absl::StatusOr<Tensor> empty = ParseNpy(MakeNpy(
      "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (0, 5)}", "",
      /*major=*/3));
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->shape(), Shape({0, 5}));
}

TEST(NpyTest, NormalisesBools) {
  absl::StatusOr<Tensor> t = ParseNpy(MakeNpy(
      "{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }",
      std::string("\x00\x07", 2)));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(static_cast<const unsigned char*>(t->raw_data())[1], 1);
}

TEST(NpyTest, FortranOrderIsAnError) {
  ExpectBad(MakeNpy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
                    Bytes<float>({1, 2, 3, 4, 5, 6})),
            "Fortran-order");
}

TEST(NpyTest, FortranOrderOfAVectorIsFine) {
  EXPECT_TRUE(
      ParseNpy(MakeNpy("{'descr': '<f4', 'fortran_order': True, 'shape': (1, 3), }",
                       Bytes<float>({1, 2, 3})))
          .ok());
}

TEST(NpyTest, BigEndianIsAnError) {
  ExpectBad(MakeNpy("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }",
                    Bytes<float>({1})),
            "big-endian");
}

TEST(NpyTest, UnsupportedDtypesAreErrors) {
  ExpectBad(MakeNpy("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }",
                    std::string(8, '\0')),
            "object arrays");
  ExpectBad(MakeNpy("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }",
                    std::string(8, '\0')),
            "complex");
  ExpectBad(MakeNpy("{'descr': '<f1', 'fortran_order': False, 'shape': (1,), }",
                    std::string(1, '\0')),
            "'<f1'");  // ml_dtypes' float8_e5m2: no dtype in the file
  ExpectBad(MakeNpy("{'descr': '|V2', 'fortran_order': False, 'shape': (1,), }",
                    std::string(2, '\0')),
            "bfloat16");
  ExpectBad(MakeNpy("{'descr': [('a', '<f4')], 'fortran_order': False, "
                    "'shape': (1,), }",
                    std::string(4, '\0')),
            "structured");
}

TEST(NpyTest, ReadsUnsignedAnd16BitIntegers) {
  absl::StatusOr<Tensor> t = ParseNpy(MakeNpy(
      "{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }",
      Bytes<uint16_t>({1, 65535})));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype(), DT_UINT16);
  EXPECT_EQ(t->data<uint16_t>()[1], 65535);
  t = ParseNpy(MakeNpy(
      "{'descr': '<u8', 'fortran_order': False, 'shape': (1,), }",
      Bytes<uint64_t>({uint64_t{1} << 63})));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype(), DT_UINT64);
  t = ParseNpy(MakeNpy(
      "{'descr': '<i2', 'fortran_order': False, 'shape': (1,), }",
      Bytes<int16_t>({-5})));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype(), DT_INT16);
}

TEST(NpyTest, TruncatedDataIsAnError) {
  ExpectBad(MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }",
                    Bytes<float>({1, 2, 3})),
            "truncated: shape [4] of <f4 needs 16 data bytes, the file has 12");
}

TEST(NpyTest, ExtraDataIsAnError) {
  ExpectBad(MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }",
                    Bytes<float>({1, 2})),
            "needs 4 data bytes, the file has 8");
}

TEST(NpyTest, HugeShapeIsAnErrorNotAnAllocation) {
  ExpectBad(MakeNpy("{'descr': '<f4', 'fortran_order': False, "
                    "'shape': (1000000, 1000000, 1000000), }",
                    ""),
            "2^48");
  ExpectBad(MakeNpy("{'descr': '<f4', 'fortran_order': False, "
                    "'shape': (99999999999999999999999,), }",
                    ""),
            "larger than 2^48");
  // Within 2^48 elements, but far more bytes than the file has.
  ExpectBad(MakeNpy("{'descr': '<f8', 'fortran_order': False, "
                    "'shape': (16777216, 16777216), }",
                    ""),
            "truncated");
}

TEST(NpyTest, HeaderLengthBeyondTheFileIsAnError) {
  std::string bytes = MakeNpy(
      "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }",
      Bytes<float>({1}));
  bytes[8] = '\xff';
  bytes[9] = '\x7f';
  ExpectBad(bytes, "truncated: the header claims 32767 bytes");
}

TEST(NpyTest, MalformedFilesAreErrors) {
  ExpectBad("", "magic");
  ExpectBad("\x93NUMPY", "magic");
  ExpectBad(std::string("\x93NUMPY\x09\x00\x00\x00", 10), "format version 9");
  ExpectBad(MakeNpy("{'descr': '<f4', 'shape': (1,), }", Bytes<float>({1})),
            "needs 'descr', 'fortran_order' and 'shape'");
  ExpectBad(MakeNpy("{'descr': '<f4', 'fortran_order': False, "
                    "'shape': (-1,), }",
                    ""),
            "non-negative dimension");
  ExpectBad(MakeNpy("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,)}",
                    Bytes<float>({1})),
            "True or False");
  ExpectBad(MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), "
                    "'extra': 1}",
                    Bytes<float>({1})),
            "unexpected header key 'extra'");
  ExpectBad(MakeNpy("{'descr': '<f4", ""), "unterminated string");
}

TEST(NpyTest, RoundTripsThroughAFile) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "sluice_npy_test.npy").string();
  Tensor t = Tensor::FromVector<int32_t>({1, -2, 3, -4, 5, -6}, Shape({3, 2}));
  ASSERT_TRUE(WriteNpy(t, path).ok());
  absl::StatusOr<Tensor> back = ReadNpy(path);
  std::remove(path.c_str());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(TensorsEqual(t, *back));
}

// WriteNpy streams the data in chunks (1 Mi elements when widening): a
// tensor over several chunks, with a ragged end, reads back the same, and
// equals what SerializeNpy builds in memory.
TEST(NpyTest, WritesLargeTensorsInChunksThatReadBack) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "sluice_npy_chunks.npy").string();
  const int64_t n = (int64_t{1} << 21) + 3;
  absl::StatusOr<Tensor> t = Tensor::Create(DT_BFLOAT16, Shape({n}));
  ASSERT_TRUE(t.ok());
  for (int64_t i = 0; i < n; ++i) {
    t->data<bfloat16>()[i] = bfloat16(static_cast<float>(i % 251) - 125.0f);
  }
  ASSERT_TRUE(WriteNpy(*t, path).ok());
  std::ifstream in(path, std::ios::binary);
  const std::string file((std::istreambuf_iterator<char>(in)),
                         std::istreambuf_iterator<char>());
  absl::StatusOr<Tensor> back = ReadNpy(path);
  std::remove(path.c_str());
  absl::StatusOr<std::string> bytes = SerializeNpy(*t);
  ASSERT_TRUE(bytes.ok());
  EXPECT_TRUE(file == *bytes) << "file " << file.size() << " bytes, "
                              << bytes->size() << " in memory";
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->dtype(), DT_FLOAT);
  ASSERT_EQ(back->NumElements(), n);
  for (int64_t i : {int64_t{0}, int64_t{1} << 20, n - 1}) {
    EXPECT_EQ(back->data<float>()[i], static_cast<float>(i % 251) - 125.0f) << i;
  }
}

// A write that fails part way (here: a folder where the file would go, so
// nothing opens) is an error, and leaves no partial file.
TEST(NpyTest, AWriteThatCannotOpenIsAnErrorAndLeavesNoFile) {
  const std::string dir =
      (std::filesystem::temp_directory_path() / "sluice_npy_no_such_dir").string();
  std::filesystem::remove_all(dir);
  Tensor t = Tensor::FromVector<float>({1, 2, 3}, Shape({3}));
  absl::Status s = WriteNpy(t, dir + "/x.npy");
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  EXPECT_FALSE(std::filesystem::exists(dir + "/x.npy"));
}

TEST(NpyTest, WritesTheHeaderNumPyWrites) {
  Tensor t = Tensor::FromVector<float>({1, 2, 3}, Shape({3}));
  absl::StatusOr<std::string> bytes = SerializeNpy(t);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(bytes->size(), 128u + 12u);  // header padded to 64-byte units
  EXPECT_EQ(bytes->substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_THAT(*bytes, HasSubstr("{'descr': '<f4', 'fortran_order': False, "
                                "'shape': (3,), }"));
  EXPECT_EQ((*bytes)[127], '\n');
}

// Six values each dtype holds exactly (distinct where it can), as doubles.
std::vector<double> ExactValues(DataType dtype) {
  switch (dtype) {
    case DT_BOOL: return {1, 0, 1, 1, 0, 0};
    case DT_UINT8: case DT_UINT16: case DT_UINT32: case DT_UINT64:
    case DT_UINT4: case DT_UINT2: return {1, 0, 3, 2, 1, 3};
    case DT_INT8: case DT_INT16: case DT_INT32: case DT_INT64:
    case DT_INT4: case DT_INT2: return {1, 0, -1, -2, 1, 0};
    case DT_FLOAT8_E8M0: return {1, 2, 0.5, 4, 0.25, 8};  // powers of two
    default: return {1, -0.5, 3, 0, 1.5, -2};  // float4 E2M1 holds these
  }
}

using testing::FromDouble;
using testing::ToDouble;

Tensor FromDoubles(DataType dtype, const Shape& shape, const std::vector<double>& v) {
  absl::StatusOr<Tensor> t = Tensor::Create(dtype, shape);
  EXPECT_TRUE(t.ok()) << t.status();
  SLUICE_SWITCH_DTYPE(dtype, {
    T* p = t->data<T>();
    for (size_t i = 0; i < v.size(); ++i) p[i] = FromDouble<T>(v[i]);
  }, {});
  return *t;
}

std::vector<double> AsDoubles(const Tensor& t) {
  std::vector<double> out;
  SLUICE_SWITCH_DTYPE(t.dtype(), {
    const T* p = t.data<T>();
    for (int64_t i = 0; i < t.NumElements(); ++i) out.push_back(ToDouble<T>(p[i]));
  }, {});
  return out;
}

TEST(NpyTest, RoundTripsEveryDtypeWithItsValues) {
  for (DataType dtype : AllDataTypes()) {
    const std::vector<double> values = ExactValues(dtype);
    const Tensor t = FromDoubles(dtype, Shape({2, 3}), values);
    ASSERT_EQ(AsDoubles(t), values) << DataTypeName(dtype) << " holds the values";
    absl::StatusOr<std::string> bytes = SerializeNpy(t);
    ASSERT_TRUE(bytes.ok()) << DataTypeName(dtype);
    absl::StatusOr<Tensor> back = ParseNpy(*bytes);
    ASSERT_TRUE(back.ok()) << DataTypeName(dtype) << ": " << back.status();
    EXPECT_EQ(back->dtype(), NpyWrittenType(dtype)) << DataTypeName(dtype);
    EXPECT_EQ(back->shape(), Shape({2, 3})) << DataTypeName(dtype);
    EXPECT_EQ(AsDoubles(*back), values) << DataTypeName(dtype);
  }
}

TEST(NpyTest, RoundTripsEmptyTensorsOfEveryDtypeAndScalars) {
  for (DataType dtype : AllDataTypes()) {
    absl::StatusOr<Tensor> t = Tensor::Zeros(dtype, Shape({2, 0, 3}));
    ASSERT_TRUE(t.ok());
    absl::StatusOr<std::string> bytes = SerializeNpy(*t);
    ASSERT_TRUE(bytes.ok()) << DataTypeName(dtype);
    absl::StatusOr<Tensor> back = ParseNpy(*bytes);
    ASSERT_TRUE(back.ok()) << DataTypeName(dtype) << ": " << back.status();
    EXPECT_EQ(back->dtype(), NpyWrittenType(dtype));
    EXPECT_EQ(back->shape(), Shape({2, 0, 3}));
  }
  Tensor scalar = Tensor::Scalar<double>(2.5);
  absl::StatusOr<Tensor> back = ParseNpy(*SerializeNpy(scalar));
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(TensorsEqual(scalar, *back));
}

TEST(NpyTest, WritesBfloat16AsFloat32) {
  Tensor t = Tensor::FromVector<bfloat16>(
      {bfloat16(1.5f), bfloat16(-2.0f)}, Shape({2}));
  absl::StatusOr<Tensor> back = ParseNpy(*SerializeNpy(t));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->dtype(), DT_FLOAT);
  EXPECT_EQ(back->flat<float>()[0], 1.5f);
  EXPECT_EQ(back->flat<float>()[1], -2.0f);
}

TEST(NpyTest, MissingFileIsNotFound) {
  absl::StatusOr<Tensor> t = ReadNpy("/no/such/file.npy");
  EXPECT_EQ(t.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("/no/such/file.npy"));
}

TEST(NpyTest, ReadNpyChecksSizesLikeParseNpy) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "sluice_npy_trunc.npy")
          .string();
  {
    std::ofstream out(path, std::ios::binary);
    out << MakeNpy(
        "{'descr': '<f8', 'fortran_order': False, 'shape': (100000000,), }",
        "abc");
  }
  absl::StatusOr<Tensor> t = ReadNpy(path);
  std::remove(path.c_str());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("truncated"));
}

}  // namespace
}  // namespace sluice::npy_test
