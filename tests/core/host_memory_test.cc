#include "core/host_memory.h"

#include <cstring>
#include <memory>

#include "gtest/gtest.h"

namespace sluice {
namespace {

TEST(HostMemoryTest, ReadsResidentAndPeak) {
  const HostMemoryUsage m = ReadHostMemoryUsage();
  EXPECT_GT(m.rss_bytes, 0);
  EXPECT_GE(m.peak_rss_bytes, m.rss_bytes);
}

TEST(HostMemoryTest, PeakCountsTouchedMemoryAndResetLowersIt) {
  constexpr size_t kBytes = size_t{64} << 20;
  if (!ResetPeakHostMemory()) GTEST_SKIP() << "clear_refs is not writable";
  const int64_t before = ReadHostMemoryUsage().rss_bytes;
  {
    std::unique_ptr<char[]> block(new char[kBytes]);
    std::memset(block.get(), 1, kBytes);
    EXPECT_GE(ReadHostMemoryUsage().peak_rss_bytes,
              before + static_cast<int64_t>(kBytes) * 9 / 10);
    EXPECT_EQ(block[kBytes - 1], 1);
  }
  // Freed (a block this large is mapped, so it goes back at once), then
  // the peak is reset to what is resident.
  ASSERT_TRUE(ResetPeakHostMemory());
  EXPECT_LT(ReadHostMemoryUsage().peak_rss_bytes,
            before + static_cast<int64_t>(kBytes) / 2);
}

}  // namespace
}  // namespace sluice
