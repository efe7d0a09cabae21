#include "distributed/bootstrap_message.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::bootstrap_message_test {
namespace {

using ::testing::HasSubstr;

std::vector<BootstrapMessage> Examples() {
  return {
      HelloMessage{
          kBootstrapProtocolVersion,
          4,
          3,
          "token-0123456789abcdef",
          {{"model", std::string("\x01\x02\x00\xff", 4)}, {"config", "c"}}},
      HelloMessage{},
      WelcomeMessage{4},
      RefusalMessage{7, "wrong job token"},
      GatherMessage{2, 1, "gpu:0 80GiB"},
      GatherResultMessage{2, {"a", "", "ccc"}},
      GatherResultMessage{9, {}},
      BroadcastMessage{3, std::string(300, 'x')},
  };
}

TEST(BootstrapMessageTest, EveryMessageRoundTrips) {
  for (const BootstrapMessage& m : Examples()) {
    std::string body = EncodeMessage(m);
    absl::StatusOr<BootstrapMessage> back = DecodeMessage(body);
    ASSERT_TRUE(back.ok()) << MessageName(m) << ": " << back.status();
    EXPECT_TRUE(*back == m) << MessageName(m);
    EXPECT_EQ(EncodeMessage(*back), body);
  }
}

TEST(BootstrapMessageTest, FrameCarriesTheBodyLength) {
  BootstrapMessage m = WelcomeMessage{2};
  std::string frame = EncodeFrame(m);
  ASSERT_EQ(frame.size(), kFrameHeaderBytes + EncodeMessage(m).size());
  absl::StatusOr<uint32_t> n = DecodeFrameLength(frame.substr(0, 4), 1024);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, frame.size() - 4);
}

TEST(BootstrapMessageTest, OversizedFrameIsRefusedBeforeItsBody) {
  std::string header("\x01\x00\x10\x00", 4);  // 1 MiB + 1
  absl::StatusOr<uint32_t> n = DecodeFrameLength(header, 1 << 20);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(n.status().message()),
              HasSubstr("above the cap of 1048576"));
  // Text where a length should be: something else is talking.
  n = DecodeFrameLength("GET ", 1 << 20);
  ASSERT_FALSE(n.ok());
  EXPECT_THAT(std::string(n.status().message()),
              HasSubstr("something other than a sluice rank"));
  n = DecodeFrameLength(std::string(4, '\0'), 1 << 20);
  EXPECT_EQ(n.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DecodeFrameLength("abc", 100).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(BootstrapMessageTest, EveryTruncationIsAnErrorNotACrash) {
  for (const BootstrapMessage& m : Examples()) {
    std::string body = EncodeMessage(m);
    for (size_t n = 0; n < body.size(); ++n) {
      absl::StatusOr<BootstrapMessage> d = DecodeMessage(body.substr(0, n));
      ASSERT_FALSE(d.ok()) << MessageName(m) << " cut at " << n;
      EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
    }
  }
  absl::StatusOr<BootstrapMessage> d =
      DecodeMessage(EncodeMessage(GatherMessage{1, 1, "abcd"}).substr(0, 12));
  EXPECT_THAT(std::string(d.status().message()),
              HasSubstr("gather message ends inside blob"));
}

TEST(BootstrapMessageTest, TrailingBytesAndUnknownTypesAreRefused) {
  std::string body = EncodeMessage(WelcomeMessage{2}) + "x";
  absl::StatusOr<BootstrapMessage> d = DecodeMessage(body);
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(std::string(d.status().message()),
              HasSubstr("1 bytes left over"));
  d = DecodeMessage(std::string("\x63\x00\x00\x00\x00", 5));
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(std::string(d.status().message()),
              HasSubstr("unknown message type 99"));
}

TEST(BootstrapMessageTest, CountsCannotClaimMoreThanTheMessageHolds) {
  // A gather result claiming 65536 blobs in 9 bytes.
  std::string body("\x05\x01\x00\x00\x00\x00\x00\x01\x00", 9);
  absl::StatusOr<BootstrapMessage> d = DecodeMessage(body);
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(std::string(d.status().message()),
              HasSubstr("blob count 65536 is more than"));
  // A hello with more fingerprint parts than the cap.
  HelloMessage hello;
  for (size_t i = 0; i <= kMaxFingerprintParts; ++i)
    hello.fingerprint.push_back({"p", "x"});
  d = DecodeMessage(EncodeMessage(hello));
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(std::string(d.status().message()), HasSubstr("the cap of 64"));
  // A refusal's reason above its cap.
  d = DecodeMessage(
      EncodeMessage(RefusalMessage{3, std::string(kMaxRefusalBytes + 1, 'r')}));
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(std::string(d.status().message()),
              HasSubstr("reason of 4097 bytes"));
}

TEST(BootstrapMessageTest, RefusalBecomesItsStatus) {
  absl::Status s =
      RefusalToStatus(RefusalMessage{7, "wrong job token"}, "rank 1: ");
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(s.message(), "rank 1: wrong job token");
  // OK or an unknown code never reads as success.
  EXPECT_EQ(RefusalToStatus(RefusalMessage{0, "x"}, "").code(),
            absl::StatusCode::kUnknown);
  EXPECT_EQ(RefusalToStatus(RefusalMessage{99, "x"}, "").code(),
            absl::StatusCode::kUnknown);
}

}  // namespace
}  // namespace sluice::bootstrap_message_test
