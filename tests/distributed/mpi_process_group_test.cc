// The MPI process group's messages of any size: cut into pieces of
// ProcessGroupOptions::max_message_bytes (1000 here) and put back together,
// sizes around the piece included, into a buffer of the exact size or a
// larger one. Needs two real ranks: tests/distributed/mpi_examples.sh runs
// this binary under `mpirun -np 2` (CTest mpi_two_ranks) and fails when it
// does not pass there; alone it skips.
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "distributed/mpi_process_group.h"
#include "distributed/process_group.h"
#include "gtest/gtest.h"

namespace sluice::mpi_process_group_test {
namespace {

bool UnderTwoMpiRanks() {
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  return size != nullptr && std::string(size) == "2";
}

std::vector<char> Pattern(size_t bytes, int seed) {
  std::vector<char> v(bytes);
  for (size_t i = 0; i < bytes; ++i) v[i] = static_cast<char>((i * 31 + seed) % 251);
  return v;
}

TEST(MpiProcessGroupTest, MessagesOfAnySizeArriveWholeInPieces) {
  if (!UnderTwoMpiRanks()) {
    GTEST_SKIP() << "runs under mpirun -np 2 (tests/distributed/mpi_examples.sh)";
  }
  ProcessGroupOptions options;
  options.max_message_bytes = 1000;
  absl::StatusOr<std::unique_ptr<ProcessGroup>> group =
      ConnectMpiProcessGroup(options);
  ASSERT_TRUE(group.ok()) << group.status();
  ProcessGroup& g = **group;
  const std::vector<size_t> sizes = {0, 1, 999, 1000, 1001, 2000, 4567};
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  std::vector<std::vector<char>> sent;  // alive until WaitSends
  for (size_t i = 0; i < sizes.size(); ++i) {
    // Each size twice: received into its exact size, then into a buffer
    // 1500 bytes larger (the pieces, not the buffer, end the message).
    for (int larger = 0; larger < 2; ++larger) {
      const int tag = static_cast<int>(2 * i) + larger;
      if (g.rank() == 0) {
        sent.push_back(Pattern(sizes[i], tag));
        ASSERT_TRUE(g.Send(1, tag, sent.back().data(), sizes[i]).ok());
      } else {
        std::vector<char> got(sizes[i] + (larger ? 1500 : 0), 'x');
        absl::StatusOr<size_t> n = g.Recv(0, tag, got.data(), got.size(), deadline);
        ASSERT_TRUE(n.ok()) << "size " << sizes[i] << ": " << n.status();
        ASSERT_EQ(*n, sizes[i]);
        got.resize(*n);
        EXPECT_EQ(got, Pattern(sizes[i], tag)) << "size " << sizes[i];
      }
    }
  }
  if (g.rank() == 0) {
    ASSERT_TRUE(g.WaitSends(0, deadline).ok());
  }
  // Both ranks are done before the group goes.
  absl::StatusOr<std::vector<std::string>> done =
      g.AllGather("done", absl::Seconds(30));
  ASSERT_TRUE(done.ok()) << done.status();
}

}  // namespace
}  // namespace sluice::mpi_process_group_test
