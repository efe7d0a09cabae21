// Fingerprint64 and FingerprintFile (core/fingerprint.h): equal bytes give
// equal fingerprints, any one changed bit or byte count another, pieces
// chain, and a file's fingerprint is that of its bytes.
#include "core/fingerprint.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "core/host_memory.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/sanitizers.h"

namespace sluice::fingerprint_test {
namespace {

std::string Bytes(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(i * 131 + 7);
  return s;
}

TEST(FingerprintTest, EveryFlippedBitChangesIt) {
  // Sizes around the 32-byte blocks and the 8-byte tail words.
  for (size_t n : {1, 7, 8, 31, 32, 33, 64, 100}) {
    const std::string s = Bytes(n);
    const uint64_t base = Fingerprint64(s.data(), s.size());
    EXPECT_EQ(Fingerprint64(s.data(), s.size()), base);
    std::set<uint64_t> seen = {base};
    for (size_t bit = 0; bit < 8 * n; ++bit) {
      std::string t = s;
      t[bit / 8] ^= static_cast<char>(1 << (bit % 8));
      EXPECT_TRUE(seen.insert(Fingerprint64(t.data(), t.size())).second)
          << "size " << n << " bit " << bit;
    }
  }
}

TEST(FingerprintTest, LengthAndSeedChangeIt) {
  const std::string zeros(64, '\0');
  std::set<uint64_t> seen;
  for (size_t n = 0; n <= 64; ++n) {
    EXPECT_TRUE(seen.insert(Fingerprint64(zeros.data(), n)).second) << n;
  }
  const std::string s = Bytes(40);
  EXPECT_NE(Fingerprint64(s.data(), s.size(), 1),
            Fingerprint64(s.data(), s.size(), 2));
  // Chained pieces: the second's seed is the first's fingerprint, so a
  // change to the first piece changes the chain.
  std::string t = s;
  t[3] ^= 1;
  EXPECT_NE(Fingerprint64(s.data() + 10, 30, Fingerprint64(s.data(), 10)),
            Fingerprint64(t.data() + 10, 30, Fingerprint64(t.data(), 10)));
}

TEST(FingerprintTest, AFileIsFingerprintedByItsBytes) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / "sluice_fingerprint_test.bin";
  const std::string s = Bytes(100003);
  std::ofstream(path, std::ios::binary) << s;
  int64_t size = 0;
  absl::StatusOr<uint64_t> f = FingerprintFile(path.string(), &size);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(*f, Fingerprint64(s.data(), s.size()));
  EXPECT_EQ(size, 100003);
  EXPECT_EQ(FingerprintHex(*f).size(), 16u);
  std::filesystem::remove(path);
  absl::StatusOr<uint64_t> missing = FingerprintFile(path.string());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(),
              ::testing::HasSubstr("sluice_fingerprint_test.bin"));
}

// A file of several of FingerprintFile's 8 MiB windows and a tail has the
// fingerprint of its bytes in one piece, and hashing it leaves no more than
// a window or two of it resident (the mapping's pages are dropped behind).
TEST(FingerprintTest, ALargeFileIsHashedWindowByWindowAndNotHeldResident) {
  if (testing::kThreadSanitizer) GTEST_SKIP() << testing::kTsanRssReason;
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / "sluice_fingerprint_large.bin";
  const std::string s = Bytes((size_t{40} << 20) + 37);
  std::ofstream(path, std::ios::binary) << s;
  const bool reset = ResetPeakHostMemory();
  const int64_t before = ReadHostMemoryUsage().peak_rss_bytes;
  absl::StatusOr<uint64_t> f = FingerprintFile(path.string());
  const int64_t peak = ReadHostMemoryUsage().peak_rss_bytes;
  std::filesystem::remove(path);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(*f, Fingerprint64(s.data(), s.size()));
  if (reset && before > 0) {
    EXPECT_LT(peak - before, int64_t{24} << 20);
  }
}

}  // namespace
}  // namespace sluice::fingerprint_test
