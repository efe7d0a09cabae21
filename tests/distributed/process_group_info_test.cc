#include "distributed/process_group_info.h"

#include <map>
#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::process_group_info_test {
namespace {

using ::testing::HasSubstr;

EnvLookup FakeEnv(std::map<std::string, std::string> vars) {
  return [vars](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

constexpr char kToken[] = "0123456789abcdef0123";

void ExpectInvalid(std::map<std::string, std::string> vars,
                   const std::string& substring) {
  absl::StatusOr<ProcessGroupInfo> info = DetectProcessGroup(FakeEnv(vars));
  ASSERT_FALSE(info.ok()) << substring;
  EXPECT_EQ(info.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(info.status().message()), HasSubstr(substring));
}

TEST(ProcessGroupInfoTest, NoLauncherIsRankZeroOfOne) {
  absl::StatusOr<ProcessGroupInfo> info = DetectProcessGroup(FakeEnv({}));
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->rank, 0);
  EXPECT_EQ(info->world_size, 1);
  EXPECT_EQ(info->launcher, Launcher::kNone);
  EXPECT_FALSE(info->local_rank.has_value());
  EXPECT_FALSE(info->coordinator.has_value());
}

TEST(ProcessGroupInfoTest, ReadsSluiceVariables) {
  absl::StatusOr<ProcessGroupInfo> info =
      DetectProcessGroup(FakeEnv({{"SLUICE_RANK", "2"},
                                  {"SLUICE_WORLD_SIZE", "4"},
                                  {"SLUICE_LOCAL_RANK", "0"},
                                  {"SLUICE_COORDINATOR", "node7:29500"},
                                  {"SLUICE_JOB_TOKEN", kToken}}));
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->rank, 2);
  EXPECT_EQ(info->world_size, 4);
  EXPECT_EQ(info->local_rank, 0);
  EXPECT_EQ(info->launcher, Launcher::kSluice);
  ASSERT_TRUE(info->coordinator.has_value());
  EXPECT_EQ(info->coordinator->host, "node7");
  EXPECT_EQ(info->coordinator->port, 29500);
  EXPECT_EQ(info->job_token, kToken);
  ASSERT_FALSE(info->notes.empty());
  EXPECT_THAT(info->notes.back(), HasSubstr("rank 2 of 4"));
}

TEST(ProcessGroupInfoTest, ReadsOpenMpiVariables) {
  absl::StatusOr<ProcessGroupInfo> info =
      DetectProcessGroup(FakeEnv({{"OMPI_COMM_WORLD_RANK", "3"},
                                  {"OMPI_COMM_WORLD_SIZE", "8"},
                                  {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                  {"PMIX_RANK", "3"}}));
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->rank, 3);
  EXPECT_EQ(info->world_size, 8);
  EXPECT_EQ(info->local_rank, 1);
  EXPECT_EQ(info->launcher, Launcher::kOpenMpi);
  // No coordinator or token is needed under MPI.
  EXPECT_FALSE(info->coordinator.has_value());
}

TEST(ProcessGroupInfoTest, ReadsSlurmVariables) {
  absl::StatusOr<ProcessGroupInfo> info = DetectProcessGroup(FakeEnv(
      {{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "6"}, {"SLURM_LOCALID", "1"}}));
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->rank, 5);
  EXPECT_EQ(info->world_size, 6);
  EXPECT_EQ(info->local_rank, 1);
  EXPECT_EQ(info->launcher, Launcher::kSlurm);
}

TEST(ProcessGroupInfoTest, PmixRankTakesTheWorldSizeFromSluice) {
  absl::StatusOr<ProcessGroupInfo> info =
      DetectProcessGroup(FakeEnv({{"PMIX_RANK", "1"},
                                  {"SLUICE_RANK", "1"},
                                  {"SLUICE_WORLD_SIZE", "2"},
                                  {"SLUICE_COORDINATOR", "29500"},
                                  {"SLUICE_JOB_TOKEN", kToken}}));
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->rank, 1);
  EXPECT_EQ(info->world_size, 2);
  ExpectInvalid({{"PMIX_RANK", "1"}}, "no launcher gives the world size");
}

TEST(ProcessGroupInfoTest, SlurmIsIgnoredUnderMpiInsideAnAllocation) {
  absl::StatusOr<ProcessGroupInfo> info =
      DetectProcessGroup(FakeEnv({{"OMPI_COMM_WORLD_RANK", "3"},
                                  {"OMPI_COMM_WORLD_SIZE", "4"},
                                  {"SLURM_PROCID", "0"},
                                  {"SLURM_NTASKS", "1"}}));
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->rank, 3);
  EXPECT_EQ(info->launcher, Launcher::kOpenMpi);
  EXPECT_THAT(info->notes.front(), HasSubstr("SLURM_PROCID=0 ignored"));
}

TEST(ProcessGroupInfoTest, LaunchersThatDisagreeAreRefusedWithBothValues) {
  ExpectInvalid({{"SLUICE_RANK", "1"},
                 {"SLUICE_WORLD_SIZE", "2"},
                 {"SLUICE_COORDINATOR", "29500"},
                 {"SLUICE_JOB_TOKEN", kToken},
                 {"OMPI_COMM_WORLD_RANK", "0"},
                 {"OMPI_COMM_WORLD_SIZE", "2"}},
                "launchers disagree");
  ExpectInvalid({{"SLUICE_RANK", "1"},
                 {"SLUICE_WORLD_SIZE", "2"},
                 {"SLUICE_COORDINATOR", "29500"},
                 {"SLUICE_JOB_TOKEN", kToken},
                 {"SLURM_PROCID", "1"},
                 {"SLURM_NTASKS", "3"}},
                "sluice (SLUICE_RANK=1, SLUICE_WORLD_SIZE=2) against Slurm "
                "(SLURM_PROCID=1, SLURM_NTASKS=3)");
  ExpectInvalid({{"OMPI_COMM_WORLD_RANK", "1"},
                 {"OMPI_COMM_WORLD_SIZE", "2"},
                 {"PMIX_RANK", "0"}},
                "PMIX_RANK=0");
}

TEST(ProcessGroupInfoTest, MalformedNumbersNameTheVariable) {
  ExpectInvalid({{"SLUICE_RANK", "one"}, {"SLUICE_WORLD_SIZE", "2"}},
                "SLUICE_RANK='one' is not a whole number");
  ExpectInvalid({{"SLUICE_RANK", "-1"}, {"SLUICE_WORLD_SIZE", "2"}},
                "SLUICE_RANK='-1'");
  ExpectInvalid({{"SLUICE_RANK", "0"}, {"SLUICE_WORLD_SIZE", "0"}},
                "SLUICE_WORLD_SIZE='0'");
  ExpectInvalid(
      {{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "99999999999"}},
      "OMPI_COMM_WORLD_SIZE='99999999999'");
  ExpectInvalid({{"SLURM_PROCID", "1x"}, {"SLURM_NTASKS", "2"}},
                "SLURM_PROCID='1x'");
  ExpectInvalid({{"SLUICE_RANK", ""}, {"SLUICE_WORLD_SIZE", "2"}},
                "SLUICE_RANK=''");
}

TEST(ProcessGroupInfoTest, RankAtOrAboveTheWorldSizeIsRefused) {
  ExpectInvalid({{"SLUICE_RANK", "2"},
                 {"SLUICE_WORLD_SIZE", "2"},
                 {"SLUICE_COORDINATOR", "29500"},
                 {"SLUICE_JOB_TOKEN", kToken}},
                "rank 2 is not below the world size 2");
  ExpectInvalid({{"SLUICE_RANK", "1"},
                 {"SLUICE_WORLD_SIZE", "4"},
                 {"SLUICE_LOCAL_RANK", "2"},
                 {"SLUICE_COORDINATOR", "29500"},
                 {"SLUICE_JOB_TOKEN", kToken}},
                "local rank 2 is above the rank 1");
}

TEST(ProcessGroupInfoTest, HalfAPairIsRefused) {
  ExpectInvalid({{"SLUICE_RANK", "0"}},
                "SLUICE_RANK is set but SLUICE_WORLD_SIZE is not");
  ExpectInvalid({{"OMPI_COMM_WORLD_SIZE", "2"}},
                "OMPI_COMM_WORLD_SIZE is set but OMPI_COMM_WORLD_RANK is not");
  ExpectInvalid({{"SLUICE_LOCAL_RANK", "0"}}, "SLUICE_LOCAL_RANK is set but");
}

TEST(ProcessGroupInfoTest, SluiceLauncherNeedsCoordinatorAndToken) {
  ExpectInvalid({{"SLUICE_RANK", "0"},
                 {"SLUICE_WORLD_SIZE", "2"},
                 {"SLUICE_JOB_TOKEN", kToken}},
                "needs SLUICE_COORDINATOR");
  ExpectInvalid({{"SLUICE_RANK", "0"},
                 {"SLUICE_WORLD_SIZE", "2"},
                 {"SLUICE_COORDINATOR", "1234"}},
                "needs SLUICE_JOB_TOKEN");
  // A short token is refused without echoing it.
  absl::StatusOr<ProcessGroupInfo> info =
      DetectProcessGroup(FakeEnv({{"SLUICE_RANK", "0"},
                                  {"SLUICE_WORLD_SIZE", "2"},
                                  {"SLUICE_COORDINATOR", "1234"},
                                  {"SLUICE_JOB_TOKEN", "secret42"}}));
  ASSERT_FALSE(info.ok());
  EXPECT_THAT(std::string(info.status().message()), HasSubstr("(it has 8)"));
  EXPECT_THAT(std::string(info.status().message()),
              ::testing::Not(HasSubstr("secret42")));
  // A world of one needs neither.
  EXPECT_TRUE(DetectProcessGroup(
                  FakeEnv({{"SLUICE_RANK", "0"}, {"SLUICE_WORLD_SIZE", "1"}}))
                  .ok());
}

TEST(ProcessGroupInfoTest, ParsesCoordinatorAddresses) {
  struct Case {
    const char* text;
    const char* host;
    int port;
  };
  for (const Case& c :
       {Case{"10.0.0.1:29500", "10.0.0.1", 29500},
        Case{"29500", "127.0.0.1", 29500}, Case{":29500", "127.0.0.1", 29500},
        Case{"[::1]:65535", "::1", 65535},
        Case{"host-a.cluster:1", "host-a.cluster", 1}}) {
    absl::StatusOr<HostPort> hp = ParseHostPort(c.text, "SLUICE_COORDINATOR");
    ASSERT_TRUE(hp.ok()) << c.text << ": " << hp.status();
    EXPECT_EQ(hp->host, c.host) << c.text;
    EXPECT_EQ(hp->port, c.port) << c.text;
  }
  EXPECT_EQ((HostPort{"::1", 5}).ToString(), "[::1]:5");
  EXPECT_EQ((HostPort{"a", 5}).ToString(), "a:5");
}

TEST(ProcessGroupInfoTest, BadCoordinatorAddressesAreRefused) {
  for (const char* text :
       {"host:0", "host:65536", "host:", "host:port", "", "::1:80", "[::1]80",
        "[]:80", "host :80", "host:80 ", "host:123456", "host:-1"}) {
    absl::StatusOr<HostPort> hp = ParseHostPort(text, "SLUICE_COORDINATOR");
    ASSERT_FALSE(hp.ok()) << text;
    EXPECT_EQ(hp.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(std::string(hp.status().message()),
                HasSubstr("SLUICE_COORDINATOR"))
        << text;
  }
  ExpectInvalid({{"SLUICE_RANK", "0"},
                 {"SLUICE_WORLD_SIZE", "2"},
                 {"SLUICE_JOB_TOKEN", kToken},
                 {"SLUICE_COORDINATOR", "node:99999"}},
                "port '99999' is not a number in 1..65535");
}

TEST(ProcessGroupInfoTest, GeneratesDistinctHexTokens) {
  std::set<std::string> seen;
  for (int i = 0; i < 4; ++i) {
    absl::StatusOr<std::string> t = GenerateJobToken();
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(t->size(), 64u);
    EXPECT_EQ(t->find_first_not_of("0123456789abcdef"), std::string::npos);
    seen.insert(*t);
  }
  EXPECT_EQ(seen.size(), 4u);
}

TEST(ProcessGroupInfoTest, ConstantTimeEqualsComparesWholeStrings) {
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  EXPECT_TRUE(ConstantTimeEquals("abcdef", "abcdef"));
  EXPECT_FALSE(ConstantTimeEquals("abcdef", "abcdeg"));
  EXPECT_FALSE(ConstantTimeEquals("abcdef", "abcde"));
  EXPECT_FALSE(ConstantTimeEquals("abc", absl::string_view("abc\0", 4)));
  EXPECT_FALSE(ConstantTimeEquals("", "a"));
  EXPECT_FALSE(ConstantTimeEquals("xbcdef", "abcdef"));
}

}  // namespace
}  // namespace sluice::process_group_info_test
