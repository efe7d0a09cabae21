#include "core/npz.h"

#include <fstream>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_data.h"

namespace sluice::npz_test {
namespace {

using ::testing::HasSubstr;

std::string Data(const std::string& file) {
  return TestDataPath("tests/core/testdata/" + file);
}

// two_arrays.npz: np.savez(x=arange(6, float32).reshape(2, 3) / 4,
// ids=int64 [3, -1, 7]), which numpy writes with ZIP64 local headers.
TEST(NpzTest, ReadsEveryArrayByName) {
  absl::StatusOr<std::vector<NamedTensor>> arrays =
      ReadNpz(Data("two_arrays.npz"));
  ASSERT_TRUE(arrays.ok()) << arrays.status();
  ASSERT_EQ(arrays->size(), 2u);
  EXPECT_EQ((*arrays)[0].first, "x");
  const Tensor& x = (*arrays)[0].second;
  ASSERT_EQ(x.dtype(), DT_FLOAT);
  ASSERT_EQ(x.shape(), Shape({2, 3}));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(x.data<float>()[i], i / 4.0f);
  EXPECT_EQ((*arrays)[1].first, "ids");
  const Tensor& ids = (*arrays)[1].second;
  ASSERT_EQ(ids.dtype(), DT_INT64);
  ASSERT_EQ(ids.shape(), Shape({3}));
  EXPECT_EQ(ids.data<int64_t>()[1], -1);
  EXPECT_EQ(ids.data<int64_t>()[2], 7);
}

TEST(NpzTest, CompressedArchiveSaysToUseSavez) {
  absl::StatusOr<std::vector<NamedTensor>> arrays =
      ReadNpz(Data("compressed.npz"));
  ASSERT_FALSE(arrays.ok());
  EXPECT_EQ(arrays.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(arrays.status().message(), HasSubstr("np.savez"));
  EXPECT_THAT(arrays.status().message(), HasSubstr("'x.npy'"));
}

TEST(NpzTest, TruncatedOrForeignBytesAreErrorsNamingTheFile) {
  std::ifstream in(Data("two_arrays.npz"), std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  const std::string whole = bytes.str();
  ASSERT_GT(whole.size(), 100u);
  // Every prefix is refused with an error, none read past the end.
  for (size_t n : {size_t{0}, size_t{21}, size_t{100}, whole.size() - 1}) {
    absl::StatusOr<std::vector<NamedTensor>> arrays =
        ParseNpz(absl::string_view(whole).substr(0, n), "cut.npz");
    EXPECT_FALSE(arrays.ok()) << n;
    EXPECT_THAT(arrays.status().message(), HasSubstr("cut.npz")) << n;
  }
  // A member's data overrunning the file (its size field made huge).
  std::string damaged = whole;
  const size_t dir = damaged.rfind(std::string("PK\x01\x02", 4));
  ASSERT_NE(dir, std::string::npos);
  damaged[dir + 20] = '\x7f';
  damaged[dir + 23] = '\x7f';
  absl::StatusOr<std::vector<NamedTensor>> arrays =
      ParseNpz(damaged, "damaged.npz");
  ASSERT_FALSE(arrays.ok());
  EXPECT_EQ(arrays.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(ReadNpz(Data("no_such.npz")).ok());
}

}  // namespace
}  // namespace sluice::npz_test
