// The bootstrap on loopback: ranks as threads of this process (and, in the
// last tests, as child processes of tests/distributed/helper), and
// misbehaving peers as raw sockets. Every wait is bounded by the options'
// timeouts, at most a few seconds.
#include "distributed/bootstrap.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <future>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

extern char** environ;

namespace sluice::bootstrap_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kToken[] = "test-token-0123456789";

BootstrapOptions Options(int rank, int world, int port) {
  BootstrapOptions o;
  o.rank = rank;
  o.world_size = world;
  o.coordinator = HostPort{"127.0.0.1", port};
  o.job_token = kToken;
  o.fingerprint = {{"model", "model-digest"}, {"config", "config-digest"}};
  o.join_timeout = absl::Seconds(5);
  o.handshake_timeout = absl::Seconds(1);
  o.collective_timeout = absl::Seconds(5);
  return o;
}

// What one rank saw: its status, and what the collectives gave it.
struct RankResult {
  absl::Status status;
  std::vector<std::string> gathered;
  std::string broadcast;
};

RankResult Collectives(
    absl::StatusOr<std::unique_ptr<ProcessGroupBootstrap>> group) {
  RankResult result;
  if (!group.ok()) {
    result.status = group.status();
    return result;
  }
  int rank = (*group)->rank();
  absl::StatusOr<std::vector<std::string>> g =
      (*group)->AllGather(absl::StrCat("from ", rank));
  if (!g.ok()) {
    result.status = g.status();
    return result;
  }
  result.gathered = *g;
  absl::StatusOr<std::string> b =
      (*group)->Broadcast(rank == 0 ? "nccl-unique-id" : "ignored");
  if (!b.ok()) {
    result.status = b.status();
    return result;
  }
  result.broadcast = *b;
  return result;
}

// Rank 0 listening on a free loopback port.
std::unique_ptr<BootstrapCoordinator> Listen(const BootstrapOptions& o) {
  absl::StatusOr<std::unique_ptr<BootstrapCoordinator>> c =
      BootstrapCoordinator::Listen(o);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *std::move(c) : nullptr;
}

std::future<RankResult> StartRank0(BootstrapCoordinator* coordinator) {
  return std::async(std::launch::async, [coordinator] {
    return Collectives(coordinator->AdmitAll());
  });
}

std::future<RankResult> StartRank(BootstrapOptions o) {
  return std::async(std::launch::async,
                    [o] { return Collectives(JoinProcessGroup(o)); });
}

void ExpectError(const absl::Status& s, absl::StatusCode code,
                 const std::string& substring) {
  EXPECT_EQ(s.code(), code) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr(substring));
}

// A raw connection to rank 0 that sends `bytes`.
TcpSocket RawPeer(int port, const std::string& bytes) {
  absl::StatusOr<TcpSocket> s =
      ConnectTcp(HostPort{"127.0.0.1", port}, absl::Now() + absl::Seconds(2));
  EXPECT_TRUE(s.ok()) << s.status();
  if (!s.ok()) return TcpSocket();
  if (!bytes.empty()) {
    EXPECT_EQ(send(s->fd(), bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }
  return *std::move(s);
}

// What rank 0 answers a raw peer (a refusal, as a status).
absl::Status AnswerTo(const TcpSocket& s) {
  absl::StatusOr<BootstrapMessage> m =
      ReceiveMessage(s, 1 << 20, absl::Now() + absl::Seconds(3), "rank 0");
  if (!m.ok()) return m.status();
  if (auto* r = std::get_if<RefusalMessage>(&*m))
    return RefusalToStatus(*r, "");
  return absl::OkStatus();
}

TEST(BootstrapTest, ThreeRanksJoinGatherAndReceiveTheBroadcast) {
  auto coordinator = Listen(Options(0, 3, 0));
  ASSERT_NE(coordinator, nullptr);
  const int port = coordinator->port();
  ASSERT_GT(port, 0);
  auto r0 = StartRank0(coordinator.get());
  auto r2 = StartRank(Options(2, 3, port));  // any order
  auto r1 = StartRank(Options(1, 3, port));
  for (auto* f : {&r0, &r1, &r2}) {
    RankResult r = f->get();
    ASSERT_TRUE(r.status.ok()) << r.status;
    EXPECT_THAT(r.gathered, ElementsAre("from 0", "from 1", "from 2"));
    EXPECT_EQ(r.broadcast, "nccl-unique-id");
  }
}

TEST(BootstrapTest, JoinsOverIpv6Loopback) {
  if (!ListenTcp(HostPort{"::1", 0}).ok()) {
    GTEST_SKIP() << "no IPv6 loopback on this machine";
  }
  BootstrapOptions o0 = Options(0, 2, 0);
  o0.coordinator.host = "::1";
  auto coordinator = Listen(o0);
  ASSERT_NE(coordinator, nullptr);
  auto r0 = StartRank0(coordinator.get());
  BootstrapOptions o1 = Options(1, 2, coordinator->port());
  o1.coordinator.host = "::1";
  RankResult r1 = StartRank(o1).get();
  ASSERT_TRUE(r1.status.ok()) << r1.status;
  EXPECT_THAT(r1.gathered, ElementsAre("from 0", "from 1"));
  EXPECT_TRUE(r0.get().status.ok());
}

TEST(BootstrapTest, CollectivesRunInSequence) {
  auto coordinator = Listen(Options(0, 2, 0));
  ASSERT_NE(coordinator, nullptr);
  auto peer =
      std::async(std::launch::async, [o = Options(1, 2, coordinator->port())] {
        auto g = JoinProcessGroup(o);
        std::vector<std::string> seen;
        for (int i = 0; g.ok() && i < 3; ++i) {
          auto all = (*g)->AllGather(absl::StrCat("p", i));
          auto b = (*g)->Broadcast("");
          if (!all.ok() || !b.ok()) return seen;
          seen.push_back(absl::StrCat((*all)[0], (*all)[1], *b));
        }
        return seen;
      });
  auto g = coordinator->AdmitAll();
  ASSERT_TRUE(g.ok()) << g.status();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE((*g)->AllGather(absl::StrCat("c", i)).ok());
    ASSERT_TRUE((*g)->Broadcast(absl::StrCat("b", i)).ok());
  }
  EXPECT_THAT(peer.get(), ElementsAre("c0p0b0", "c1p1b1", "c2p2b2"));
}

TEST(BootstrapTest, WorldOfOneNeedsNoPeersCoordinatorOrToken) {
  absl::StatusOr<BootstrapOptions> o =
      BootstrapOptionsFor(ProcessGroupInfo(), {});
  ASSERT_TRUE(o.ok()) << o.status();
  RankResult r = Collectives(JoinProcessGroup(*o));
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_THAT(r.gathered, ElementsAre("from 0"));
  EXPECT_EQ(r.broadcast, "nccl-unique-id");
}

TEST(BootstrapTest, WrongTokenIsRefusedAndNamedWhenTheJobTimesOut) {
  BootstrapOptions o0 = Options(0, 2, 0);
  o0.join_timeout = absl::Seconds(1);
  auto coordinator = Listen(o0);
  ASSERT_NE(coordinator, nullptr);
  auto r0 = StartRank0(coordinator.get());
  BootstrapOptions o1 = Options(1, 2, coordinator->port());
  o1.job_token = "another-job-token-xyz";
  RankResult r1 = StartRank(o1).get();
  ExpectError(r1.status, absl::StatusCode::kPermissionDenied,
              "refused: wrong job token");
  RankResult r = r0.get();
  ExpectError(r.status, absl::StatusCode::kDeadlineExceeded,
              "rank 1 of 2 did not join");
  EXPECT_THAT(std::string(r.status.message()),
              HasSubstr("refused: wrong job token from 127.0.0.1"));
}

TEST(BootstrapTest, StrangersDoNotStopTheJob) {
  auto coordinator = Listen(Options(0, 2, 0));
  ASSERT_NE(coordinator, nullptr);
  const int port = coordinator->port();
  auto r0 = StartRank0(coordinator.get());
  // An HTTP client, then a hello with the wrong token, then rank 1.
  TcpSocket http = RawPeer(port, "GET / HTTP/1.1\r\n\r\n");
  ExpectError(AnswerTo(http), absl::StatusCode::kResourceExhausted,
              "something other than a sluice rank");
  HelloMessage hello{
      kBootstrapProtocolVersion, 2, 1, "wrong-token-0123456789", {}};
  TcpSocket stranger = RawPeer(port, EncodeFrame(hello));
  ExpectError(AnswerTo(stranger), absl::StatusCode::kPermissionDenied,
              "wrong job token");
  RankResult r1 = StartRank(Options(1, 2, port)).get();
  EXPECT_TRUE(r1.status.ok()) << r1.status;
  EXPECT_TRUE(r0.get().status.ok());
}

// Rank 1 as a raw connection that has said hello: admitted before any
// connection made after it (rank 0 takes connections in order).
TcpSocket JoinedRank1(int port, int world) {
  BootstrapOptions o = Options(1, world, port);
  return RawPeer(port, EncodeFrame(HelloMessage{kBootstrapProtocolVersion,
                                                static_cast<uint32_t>(world), 1,
                                                o.job_token, o.fingerprint}));
}

TEST(BootstrapTest, TimeoutNamesTheFirstEightStrangersAndCountsTheRest) {
  BootstrapOptions o0 = Options(0, 2, 0);
  o0.join_timeout = absl::Seconds(1);
  auto coordinator = Listen(o0);
  ASSERT_NE(coordinator, nullptr);
  auto r0 = StartRank0(coordinator.get());
  for (int i = 0; i < 10; ++i) {
    HelloMessage hello{kBootstrapProtocolVersion,
                       2,
                       1,
                       absl::StrCat("wrong-token-0123456789-", i),
                       {}};
    TcpSocket stranger = RawPeer(coordinator->port(), EncodeFrame(hello));
    ExpectError(AnswerTo(stranger), absl::StatusCode::kPermissionDenied,
                "wrong job token");
  }
  absl::Status s = r0.get().status;
  ExpectError(s, absl::StatusCode::kDeadlineExceeded,
              "; and 2 more connections");
  std::vector<absl::string_view> parts =
      absl::StrSplit(s.message(), "wrong job token");
  EXPECT_EQ(parts.size(), 9u) << s;  // eight named
}

TEST(BootstrapTest, WrongWorldSizeEndsTheJobOnEveryRank) {
  auto coordinator = Listen(Options(0, 3, 0));
  ASSERT_NE(coordinator, nullptr);
  const int port = coordinator->port();
  auto r0 = StartRank0(coordinator.get());
  TcpSocket r1 = JoinedRank1(port, 3);
  RankResult r2 = StartRank(Options(2, 4, port)).get();
  ExpectError(r2.status, absl::StatusCode::kFailedPrecondition,
              "was started with world size 4, rank 0 with 3");
  ExpectError(r0.get().status, absl::StatusCode::kFailedPrecondition,
              "world size 4");
  ExpectError(AnswerTo(r1), absl::StatusCode::kFailedPrecondition,
              "world size 4");
}

TEST(BootstrapTest, DuplicateRankIsRefused) {
  auto coordinator = Listen(Options(0, 3, 0));
  ASSERT_NE(coordinator, nullptr);
  const int port = coordinator->port();
  auto r0 = StartRank0(coordinator.get());
  TcpSocket first = JoinedRank1(port, 3);
  RankResult second = StartRank(Options(1, 3, port)).get();
  ExpectError(r0.get().status, absl::StatusCode::kAlreadyExists,
              "rank 1 joined twice, from 127.0.0.1:");
  ExpectError(AnswerTo(first), absl::StatusCode::kAlreadyExists,
              "the same rank");
  ExpectError(second.status, absl::StatusCode::kAlreadyExists, "the same rank");
}

TEST(BootstrapTest, ListenerClosesOnceTheJobHasStarted) {
  auto coordinator = Listen(Options(0, 2, 0));
  ASSERT_NE(coordinator, nullptr);
  const int port = coordinator->port();
  auto r0 = StartRank0(coordinator.get());
  ASSERT_TRUE(StartRank(Options(1, 2, port)).get().status.ok());
  ASSERT_TRUE(r0.get().status.ok());
  // A late connection is refused by the kernel, not left waiting.
  BootstrapOptions late = Options(1, 2, port);
  late.join_timeout = absl::Milliseconds(200);
  ExpectError(JoinProcessGroup(late).status(),
              absl::StatusCode::kDeadlineExceeded, "Connection refused");
}

TEST(BootstrapTest, DifferentFingerprintIsNamed) {
  auto coordinator = Listen(Options(0, 2, 0));
  ASSERT_NE(coordinator, nullptr);
  auto r0 = StartRank0(coordinator.get());
  BootstrapOptions o1 = Options(1, 2, coordinator->port());
  o1.fingerprint[0].bytes = "other-model";
  RankResult r1 = StartRank(o1).get();
  // "model-digest" and "other-model" in hex, 8 bytes each.
  const std::string difference =
      "'model' is 6f746865722d6d6f... (11 bytes) against rank 0's "
      "6d6f64656c2d6469... (12 bytes)";
  ExpectError(r1.status, absl::StatusCode::kFailedPrecondition, difference);
  ExpectError(r0.get().status, absl::StatusCode::kFailedPrecondition,
              "rank 1 (from 127.0.0.1:");
}

TEST(BootstrapTest, FingerprintDifferenceNamesMissingAndExtraParts) {
  std::vector<FingerprintPart> mine = {{"model", "m"}, {"config", "c"}};
  EXPECT_EQ(DescribeFingerprintDifference(mine, mine), "");
  EXPECT_EQ(
      DescribeFingerprintDifference(mine, {{"model", "m"}, {"devices", "d"}}),
      "no 'config' (rank 0 has 63 (1 bytes)); 'devices' 64 (1 bytes), which "
      "rank 0 does "
      "not have");
}

TEST(BootstrapTest, RankOutOfRangeIsRefused) {
  for (uint32_t claimed : {0u, 2u, 70000u}) {
    BootstrapOptions o0 = Options(0, 2, 0);
    auto coordinator = Listen(o0);
    ASSERT_NE(coordinator, nullptr);
    auto r0 = StartRank0(coordinator.get());
    HelloMessage hello{kBootstrapProtocolVersion, 2, claimed, kToken,
                       o0.fingerprint};
    TcpSocket peer = RawPeer(coordinator->port(), EncodeFrame(hello));
    ExpectError(AnswerTo(peer), absl::StatusCode::kInvalidArgument,
                "a joining rank must be in 1..1");
    ExpectError(r0.get().status, absl::StatusCode::kInvalidArgument,
                absl::StrCat("rank ", claimed, " (from 127.0.0.1"));
  }
}

TEST(BootstrapTest, OtherProtocolVersionIsRefused) {
  BootstrapOptions o0 = Options(0, 2, 0);
  auto coordinator = Listen(o0);
  ASSERT_NE(coordinator, nullptr);
  auto r0 = StartRank0(coordinator.get());
  HelloMessage hello{kBootstrapProtocolVersion + 1, 2, 1, kToken,
                     o0.fingerprint};
  TcpSocket peer = RawPeer(coordinator->port(), EncodeFrame(hello));
  ExpectError(AnswerTo(peer), absl::StatusCode::kFailedPrecondition,
              "speaks bootstrap protocol 2");
  r0.get();
}

// Rank 0 with a short join timeout, a misbehaving raw peer, and what rank 0
// says when the job times out.
absl::Status TimeoutAfterRawPeer(const std::string& bytes, bool close_after,
                                 absl::Status* answer) {
  BootstrapOptions o0 = Options(0, 2, 0);
  o0.join_timeout = absl::Milliseconds(800);
  o0.handshake_timeout = absl::Milliseconds(300);
  o0.max_message_bytes = 4096;
  auto coordinator = Listen(o0);
  if (coordinator == nullptr) return absl::InternalError("no coordinator");
  auto r0 = StartRank0(coordinator.get());
  TcpSocket peer = RawPeer(coordinator->port(), bytes);
  if (close_after) {
    shutdown(peer.fd(), SHUT_WR);
  }
  if (answer != nullptr) *answer = AnswerTo(peer);
  return r0.get().status;
}

TEST(BootstrapTest, OversizedHelloIsRefusedWithoutReadingIt) {
  absl::Status answer;
  absl::Status s =
      TimeoutAfterRawPeer(std::string("\x01\x10\x00\x00", 4), false, &answer);
  ExpectError(answer, absl::StatusCode::kResourceExhausted,
              "message of 4097 bytes");
  ExpectError(s, absl::StatusCode::kDeadlineExceeded,
              "refused: from a connection from 127.0.0.1");
  EXPECT_THAT(std::string(s.message()), HasSubstr("above the cap of 4096"));
}

TEST(BootstrapTest, MalformedHelloIsRefused) {
  absl::Status answer;
  std::string body = "\x01garbage";
  std::string frame = std::string("\x08\x00\x00\x00", 4) + body;
  absl::Status s = TimeoutAfterRawPeer(frame, false, &answer);
  ExpectError(answer, absl::StatusCode::kInvalidArgument,
              "hello message ends inside");
  ExpectError(s, absl::StatusCode::kDeadlineExceeded,
              "hello message ends inside");
  // A well-formed message that is not a hello.
  s = TimeoutAfterRawPeer(EncodeFrame(WelcomeMessage{2}), false, &answer);
  ExpectError(answer, absl::StatusCode::kInvalidArgument,
              "expected a hello message, got a welcome");
}

TEST(BootstrapTest, PeerThatStopsMidMessageIsDropped) {
  std::string partial = std::string("\x64\x00\x00\x00", 4) + "0123456789";
  // It closes: named at once.
  absl::Status s = TimeoutAfterRawPeer(partial, true, nullptr);
  ExpectError(s, absl::StatusCode::kDeadlineExceeded,
              "closed the connection after 10 of the 100 bytes of a message of "
              "100 bytes");
  // It stalls: dropped after the handshake timeout.
  s = TimeoutAfterRawPeer(partial, false, nullptr);
  ExpectError(
      s, absl::StatusCode::kDeadlineExceeded,
      "sent 10 of the 100 bytes of a message of 100 bytes and then nothing");
}

TEST(BootstrapTest, MissingRankIsNamedOnEveryRank) {
  BootstrapOptions o0 = Options(0, 4, 0);
  o0.join_timeout = absl::Seconds(1);
  auto coordinator = Listen(o0);
  ASSERT_NE(coordinator, nullptr);
  const int port = coordinator->port();
  auto r0 = StartRank0(coordinator.get());
  auto r1 = StartRank(Options(1, 4, port));
  auto r3 = StartRank(Options(3, 4, port));
  absl::Time start = absl::Now();
  ExpectError(
      r0.get().status, absl::StatusCode::kDeadlineExceeded,
      absl::StrCat("rank 2 of 4 did not join the coordinator at 127.0.0.1:",
                   port, " within 1.0 s (3 joined)"));
  // The others hear it from rank 0 instead of waiting out their own timeout.
  ExpectError(r1.get().status, absl::StatusCode::kDeadlineExceeded,
              "rank 2 of 4 did not join");
  ExpectError(r3.get().status, absl::StatusCode::kDeadlineExceeded,
              "rank 2 of 4 did not join");
  EXPECT_LT(absl::Now() - start, absl::Seconds(4));
}

TEST(BootstrapTest, RankWithNoCoordinatorGivesUpAtItsDeadline) {
  int port = 0;
  {
    auto coordinator =
        Listen(Options(0, 2, 0));  // a port nothing listens on after this
    ASSERT_NE(coordinator, nullptr);
    port = coordinator->port();
  }
  BootstrapOptions o1 = Options(1, 2, port);
  o1.join_timeout = absl::Milliseconds(300);
  absl::Time start = absl::Now();
  RankResult r1 = Collectives(JoinProcessGroup(o1));
  ExpectError(
      r1.status, absl::StatusCode::kDeadlineExceeded,
      absl::StrCat("cannot connect to the coordinator at 127.0.0.1:", port));
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
}

TEST(BootstrapTest, RankThatLeavesDuringAllGatherIsNamed) {
  auto coordinator = Listen(Options(0, 3, 0));
  ASSERT_NE(coordinator, nullptr);
  const int port = coordinator->port();
  auto r1 = StartRank(Options(1, 3, port));
  auto leaver = std::async(std::launch::async, [o = Options(2, 3, port)] {
    return JoinProcessGroup(o).status();  // joins, then closes its connection
  });
  auto g = coordinator->AdmitAll();
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_TRUE(leaver.get().ok());
  absl::StatusOr<std::vector<std::string>> all = (*g)->AllGather("x");
  ExpectError(all.status(), absl::StatusCode::kUnavailable,
              "rank 0 in all-gather 1: rank 2 closed the connection before a "
              "message's length");
  ExpectError(r1.get().status, absl::StatusCode::kUnavailable,
              "rank 1 in all-gather 1: rank 0 ended the job: rank 0 in "
              "all-gather 1: rank 2");
  // The group stays failed.
  ExpectError((*g)->Broadcast("y").status(),
              absl::StatusCode::kFailedPrecondition, "failed earlier");
}

TEST(BootstrapTest, CollectivesCalledOutOfOrderAreNamed) {
  auto coordinator = Listen(Options(0, 2, 0));
  ASSERT_NE(coordinator, nullptr);
  auto peer =
      std::async(std::launch::async, [o = Options(1, 2, coordinator->port())] {
        auto g = JoinProcessGroup(o);
        if (!g.ok()) return g.status();
        return (*g)->AllGather("p").status();
      });
  auto g = coordinator->AdmitAll();
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_TRUE((*g)->Broadcast("b").ok());
  ExpectError(peer.get(), absl::StatusCode::kInvalidArgument,
              "answered out of turn (expected a gather result message, got a "
              "broadcast)");
}

TEST(BootstrapTest, OversizedAllGatherFailsOnEveryRank) {
  BootstrapOptions o0 = Options(0, 3, 0);
  o0.max_message_bytes = 1000;
  auto coordinator = Listen(o0);
  ASSERT_NE(coordinator, nullptr);
  auto peer = [port = coordinator->port()](int rank) {
    return std::async(std::launch::async, [rank, port] {
      BootstrapOptions o = Options(rank, 3, port);
      o.max_message_bytes = 1000;
      auto g = JoinProcessGroup(o);
      if (!g.ok()) return g.status();
      return (*g)->AllGather(std::string(400, 'x')).status();
    });
  };
  auto r1 = peer(1);
  auto r2 = peer(2);
  auto g = coordinator->AdmitAll();
  ASSERT_TRUE(g.ok()) << g.status();
  ExpectError((*g)->AllGather(std::string(400, 'x')).status(),
              absl::StatusCode::kResourceExhausted, "the gathered blobs reach");
  ExpectError(r1.get(), absl::StatusCode::kResourceExhausted,
              "rank 0 ended the job");
  ExpectError(r2.get(), absl::StatusCode::kResourceExhausted,
              "rank 0 ended the job");
}

TEST(BootstrapTest, BadOptionsAreRefusedBeforeAnyConnection) {
  BootstrapOptions o = Options(0, 2, 0);
  o.job_token = "short";
  ExpectError(JoinProcessGroup(o).status(), absl::StatusCode::kInvalidArgument,
              "job token must have 16 to 1024 characters");
  o = Options(2, 2, 0);
  ExpectError(JoinProcessGroup(o).status(), absl::StatusCode::kInvalidArgument,
              "rank 2 is not in 0..1");
  o = Options(0, 2, 0);
  o.fingerprint.push_back({"model", "again"});
  ExpectError(JoinProcessGroup(o).status(), absl::StatusCode::kInvalidArgument,
              "repeated");
  o = Options(1, 2, 0);
  ExpectError(BootstrapCoordinator::Listen(o).status(),
              absl::StatusCode::kInvalidArgument,
              "rank 1 cannot be the coordinator");
}

TEST(BootstrapTest, ListensOnlyOnTheAddressNamed) {
  absl::StatusOr<TcpSocket> listener = ListenTcp(HostPort{"127.0.0.1", 0});
  ASSERT_TRUE(listener.ok()) << listener.status();
  sockaddr_in bound{};
  socklen_t len = sizeof(bound);
  ASSERT_EQ(
      getsockname(listener->fd(), reinterpret_cast<sockaddr*>(&bound), &len),
      0);
  EXPECT_EQ(bound.sin_family, AF_INET);
  EXPECT_EQ(ntohl(bound.sin_addr.s_addr), INADDR_LOOPBACK);  // not INADDR_ANY
  // 192.0.2.1 (TEST-NET-1) is no address of this host: binding it fails.
  BootstrapOptions o = Options(0, 2, 0);
  o.coordinator.host = "192.0.2.1";
  ExpectError(BootstrapCoordinator::Listen(o).status(),
              absl::StatusCode::kUnavailable, "cannot listen on 192.0.2.1:0");
}

TEST(BootstrapTest, OptionsComeFromTheDetectedProcessGroup) {
  ProcessGroupInfo info;
  info.rank = 1;
  info.world_size = 2;
  ExpectError(BootstrapOptionsFor(info, {}).status(),
              absl::StatusCode::kInvalidArgument, "set SLUICE_COORDINATOR");
  info.coordinator = HostPort{"127.0.0.1", 1234};
  ExpectError(BootstrapOptionsFor(info, {}).status(),
              absl::StatusCode::kInvalidArgument, "set SLUICE_JOB_TOKEN");
  info.job_token = kToken;
  absl::StatusOr<BootstrapOptions> o =
      BootstrapOptionsFor(info, {{"model", "m"}});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->rank, 1);
  EXPECT_EQ(o->world_size, 2);
  EXPECT_EQ(o->coordinator.port, 1234);
  EXPECT_EQ(o->job_token, kToken);
  EXPECT_EQ(o->fingerprint.size(), 1u);
}

// --- Real processes
// --------------------------------------------------------------

struct Child {
  pid_t pid = -1;
  int output = -1;  // stdout and stderr
};

// The helper binary: beside this test binary when it is there (where
// scripts/prepare_gpu.sh copies both), else where the build put it.
std::string RankBinary() {
  std::error_code ec;
  const std::filesystem::path self =
      std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const std::filesystem::path beside =
        self.parent_path() / "sluice_bootstrap_rank";
    if (std::filesystem::exists(beside, ec)) return beside.string();
  }
  return SLUICE_BOOTSTRAP_RANK_BINARY;
}

// Starts tests/distributed/helper/bootstrap_rank as rank `rank` of `world`,
// with this process's environment less any launcher's variables.
Child SpawnRank(int rank, int world, int port, const std::string& model) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string var(*e);
    bool launcher = false;
    for (const char* prefix :
         {"SLUICE_RANK", "SLUICE_WORLD_SIZE", "SLUICE_LOCAL_RANK",
          "SLUICE_COORDINATOR", "SLUICE_JOB_TOKEN", "OMPI_", "PMIX_",
          "SLURM_"}) {
      launcher = launcher || var.rfind(prefix, 0) == 0;
    }
    if (!launcher) env.push_back(var);
  }
  env.push_back(absl::StrCat("SLUICE_RANK=", rank));
  env.push_back(absl::StrCat("SLUICE_WORLD_SIZE=", world));
  env.push_back(absl::StrCat("SLUICE_COORDINATOR=127.0.0.1:", port));
  env.push_back(absl::StrCat("SLUICE_JOB_TOKEN=", kToken));
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string binary = RankBinary();
  std::string arg = model;
  char* argv[] = {binary.data(), arg.data(), nullptr};

  int fds[2];
  Child child;
  if (pipe(fds) != 0) return child;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  int rc = posix_spawn(&child.pid, binary.c_str(), &actions, nullptr, argv,
                       envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    ADD_FAILURE() << "posix_spawn " << binary << ": " << rc;
    close(fds[0]);
    child.pid = -1;
    return child;
  }
  child.output = fds[0];
  return child;
}

// The child's output and exit code (the helper's own timeouts bound the wait).
std::pair<std::string, int> Finish(Child child) {
  std::string out;
  if (child.pid < 0) return {out, -1};
  char buffer[4096];
  ssize_t n;
  while ((n = read(child.output, buffer, sizeof(buffer))) > 0)
    out.append(buffer, n);
  close(child.output);
  int status = 0;
  waitpid(child.pid, &status, 0);
  return {out, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

TEST(BootstrapProcessTest, ThreeProcessesJoinGatherAndReceiveTheBroadcast) {
  BootstrapOptions o0 = Options(0, 3, 0);
  o0.fingerprint = {{"model", "m1"}};
  auto coordinator = Listen(o0);
  ASSERT_NE(coordinator, nullptr);
  Child c2 = SpawnRank(2, 3, coordinator->port(), "m1");
  Child c1 = SpawnRank(1, 3, coordinator->port(), "m1");
  RankResult r0 = Collectives(coordinator->AdmitAll());
  auto [out1, code1] = Finish(c1);
  auto [out2, code2] = Finish(c2);
  ASSERT_TRUE(r0.status.ok()) << r0.status;
  EXPECT_THAT(r0.gathered, ElementsAre("from 0", "rank 1", "rank 2"));
  EXPECT_EQ(code1, 0) << out1;
  EXPECT_EQ(code2, 0) << out2;
  const std::string expected =
      "gathered: from 0|rank 1|rank 2\nbroadcast: nccl-unique-id\n";
  EXPECT_EQ(out1, expected);
  EXPECT_EQ(out2, expected);
}

TEST(BootstrapProcessTest, ProcessWithAnotherModelIsRefusedByName) {
  BootstrapOptions o0 = Options(0, 2, 0);
  o0.fingerprint = {{"model", "m1"}};
  auto coordinator = Listen(o0);
  ASSERT_NE(coordinator, nullptr);
  Child c1 = SpawnRank(1, 2, coordinator->port(), "m2");
  RankResult r0 = Collectives(coordinator->AdmitAll());
  auto [out1, code1] = Finish(c1);
  ExpectError(r0.status, absl::StatusCode::kFailedPrecondition,
              "'model' is 6d32 (2 bytes) against rank 0's 6d31 (2 bytes)");
  EXPECT_EQ(code1, 1);
  EXPECT_THAT(out1, HasSubstr("FAILED_PRECONDITION"));
  EXPECT_THAT(out1, HasSubstr("'model' is 6d32"));
}

}  // namespace
}  // namespace sluice::bootstrap_test
