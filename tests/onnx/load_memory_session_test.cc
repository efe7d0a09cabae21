// A CPU session of a generated model of 256 MiB of MatMul weights
// (large_model_writer.h), created and run for one step, grows the process's
// peak RSS (VmHWM, reset first) by less than 1.5x the weights plus 100 MiB,
// inline and as external data (issue 29's bound; the step's activations
// are a few KiB). What LoadModelGraph costs is load_memory_test.cc's.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/byte_size.h"
#include "core/host_memory.h"
#include "executor/session.h"
#include "gtest/gtest.h"
#include "tests/onnx/large_model_writer.h"

namespace sluice::load_memory_session_test {
namespace {

using onnx_test::kDim;
using onnx_test::kTotalWeightBytes;
using onnx_test::LargeModelWriter;

using LoadMemorySessionTest = onnx_test::LargeModelTest;

TEST_P(LoadMemorySessionTest, CreateAndFirstStepPeakRssStaysNearTheWeights) {
  const bool external = GetParam();
  const std::string path = LargeModelWriter(dir_).Write(external);
  if (!ResetPeakHostMemory()) {
    GTEST_SKIP() << "this kernel cannot reset the peak RSS "
                    "(/proc/self/clear_refs)";
  }
  const int64_t before = ReadHostMemoryUsage().rss_bytes;
  ASSERT_GT(before, 0);
  {
    RuntimeConfig config;
    config.set_use_gpu(false);
    absl::StatusOr<std::unique_ptr<Session>> s =
        Session::CreateFromFile(path, config);
    ASSERT_TRUE(s.ok()) << s.status();
    absl::StatusOr<std::vector<Tensor>> out = (*s)->Run(
        {{"x", Tensor::FromVector(std::vector<float>(kDim, 1.0f),
                                  Shape({1, kDim}))}},
        {"y"});
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ((*out)[0].NumElements(), kDim);
    EXPECT_EQ((*out)[0].flat<float>()[0], 24.0f);
    EXPECT_EQ((*out)[0].flat<float>()[kDim - 1], 24.0f);
  }
  const int64_t growth = ReadHostMemoryUsage().peak_rss_bytes - before;
  const int64_t bound = kTotalWeightBytes * 3 / 2 + (int64_t{100} << 20);
  EXPECT_LT(growth, bound) << "peak RSS grew by " << FormatBytes(growth)
                           << " for " << FormatBytes(kTotalWeightBytes)
                           << " of weights ("
                           << (external ? "external" : "inline") << ")";
  std::printf("%s weights: session + first step peak RSS grew by %s for %s\n",
              external ? "external" : "inline", FormatBytes(growth).c_str(),
              FormatBytes(kTotalWeightBytes).c_str());
}

INSTANTIATE_TEST_SUITE_P(Weights, LoadMemorySessionTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "External" : "Inline";
                         });

}  // namespace
}  // namespace sluice::load_memory_session_test
