#include "core/host_memory.h"

#include <sys/mman.h>

#include <cstring>
#include <memory>

#include "gtest/gtest.h"

namespace sluice::host_memory_test {
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
    // Mapped and unmapped directly, so that it goes back at once whatever
    // the allocator does with freed blocks (ASan keeps them in quarantine).
    void* mapped = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(mapped, MAP_FAILED);
    char* block = static_cast<char*>(mapped);
    std::memset(block, 1, kBytes);
    EXPECT_GE(ReadHostMemoryUsage().peak_rss_bytes,
              before + static_cast<int64_t>(kBytes) * 9 / 10);
    EXPECT_EQ(block[kBytes - 1], 1);
    ASSERT_EQ(munmap(mapped, kBytes), 0);
  }
  // Unmapped, then the peak is reset to what is resident.
  ASSERT_TRUE(ResetPeakHostMemory());
  EXPECT_LT(ReadHostMemoryUsage().peak_rss_bytes,
            before + static_cast<int64_t>(kBytes) / 2);
}

}  // namespace
}  // namespace sluice::host_memory_test
