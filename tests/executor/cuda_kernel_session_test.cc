// A CudaKernel node through a whole session: placement refuses it without a
// GPU, naming the node and why; on a GPU it runs, the kernel compiled when
// the plan is made, and keeps running once the plan replays as a CUDA
// graph; a compile error is the session's error, naming the node and
// carrying NVRTC's log. The GPU tests skip, with the reason, where no GPU
// is usable.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "device/discovery.h"
#include "executor/session.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "graph/loader.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

using ::testing::HasSubstr;

#define SKIP_WITHOUT_GPU()                                              \
  do {                                                                  \
    DeviceInventory inv = DiscoverDevices();                            \
    bool usable = false;                                                \
    for (const GpuInfo& g : inv.gpus) usable = usable || g.usable;      \
    if (!usable) GTEST_SKIP() << "no usable GPU: " << inv.no_gpu_reason; \
  } while (0)

// out = 2.5 * x + y, x and y float32[?], in a node named "saxpy" at line 3
// of the text. `body` replaces the kernel's statement.
GraphDef SaxpyDef(const std::string& body = "if (i < n) out[i] = 2.5f * x[i] + y[i];") {
  const std::string source = absl::StrCat(
      "extern \\\"C\\\" __global__ void saxpy(const float* x, const float* y, "
      "float* out, long long n) {\\n"
      "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\\n  ",
      body, "\\n}\\n");
  const std::string text = absl::StrCat(R"pb(
    node { name: "x" op: "Input" attr { key: "dtype" value { type: DT_FLOAT } } attr { key: "shape" value { shape { dim: -1 } } } }
    node { name: "y" op: "Input" attr { key: "dtype" value { type: DT_FLOAT } } attr { key: "shape" value { shape { dim: -1 } } } }
    node { name: "saxpy" op: "CudaKernel" input: "x" input: "y"
      attr { key: "Tin" value { list { type: DT_FLOAT type: DT_FLOAT } } }
      attr { key: "output_dtypes" value { list { type: DT_FLOAT } } }
      attr { key: "output_shape_like" value { list { i: 0 } } }
      attr { key: "kernel_name" value { s: "saxpy" } }
      attr { key: "source" value { s: ")pb", source, R"pb(" } } }
    signature { inputs { name: "x" } inputs { name: "y" } outputs { name: "out" tensor: "saxpy" } }
  )pb");
  GraphDef def;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &def)) << text;
  return def;
}

absl::StatusOr<std::unique_ptr<Session>> MakeSession(const GraphDef& def,
                                                     const RuntimeConfig& config) {
  absl::StatusOr<std::unique_ptr<const Graph>> g = BuildGraph(def);
  if (!g.ok()) return g.status();
  return Session::Create(*std::move(g), config);
}

TEST(CudaKernelSessionTest, WithoutAGpuPlacementFailsNamingTheNode) {
  RuntimeConfig config;
  config.set_use_gpu(false);
  auto s = MakeSession(SaxpyDef(), config);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(), HasSubstr("'saxpy' (CudaKernel)"));
  EXPECT_THAT(s.status().message(), HasSubstr("runs only on a GPU"));
}

TEST(CudaKernelSessionTest, GpuRunsMatchTheHostAndSurviveGraphReplay) {
  SKIP_WITHOUT_GPU();
  auto s = MakeSession(SaxpyDef(), RuntimeConfig());
  ASSERT_TRUE(s.ok()) << s.status();
  // Steps 3 and on replay the plan as a CUDA graph (design.md decision 8).
  for (int step = 0; step < 5; ++step) {
    const int n = 4099;
    std::vector<float> x(n), y(n);
    for (int i = 0; i < n; ++i) {
      x[i] = 0.001f * static_cast<float>(i) - step;
      y[i] = static_cast<float>(i % 13) + step;
    }
    auto out = (*s)->Run({{"x", Tensor::FromVector(x, Shape({n}))},
                          {"y", Tensor::FromVector(y, Shape({n}))}});
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ((*out)[0].shape(), Shape({n}));
    auto got = (*out)[0].flat<float>();
    for (int i = 0; i < n; ++i) {
      ASSERT_NEAR(got[i], 2.5f * x[i] + y[i], 1e-5) << "step " << step << " i " << i;
    }
  }
  EXPECT_GT((*s)->stats().gpu_graph_steps, 0);
}

TEST(CudaKernelSessionTest, ACompileErrorNamesTheNodeAndCarriesTheLog) {
  SKIP_WITHOUT_GPU();
  // The kernel compiles when a plan is made: at the first step.
  auto s = MakeSession(SaxpyDef("out[i] = x[i] +;"), RuntimeConfig());
  absl::Status error = s.status();
  if (s.ok()) {
    error = (*s)->Run({{"x", Tensor::FromVector<float>({1}, Shape({1}))},
                       {"y", Tensor::FromVector<float>({1}, Shape({1}))}})
                .status();
  }
  ASSERT_FALSE(error.ok());
  EXPECT_EQ(error.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(error.message(), HasSubstr("'saxpy'"));
  EXPECT_THAT(error.message(), HasSubstr("expected an expression"));
}

}  // namespace
}  // namespace sluice
