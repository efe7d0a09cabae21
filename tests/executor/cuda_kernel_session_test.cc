// A CudaKernel node through a whole session: placement refuses it without a
// GPU, naming the node and why, unless it has a CPU fallback, which then
// runs; on a GPU it runs, the kernel compiled when
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
#include "tests/executor/gpu_test_util.h"

namespace sluice::cuda_kernel_session_test {
namespace {

using ::testing::HasSubstr;

// out = 2.5 * x + y, x and y float32[?], in a node named "saxpy" at line 3
// of the text. `body` replaces the kernel's statement.
// The same computation as a graph: CudaKernel's cpu_fallback.
constexpr char kSaxpyFallback[] = R"pb(
  node { name: "a" op: "Input" attr { key: "dtype" value { type: DT_FLOAT } } }
  node { name: "b" op: "Input" attr { key: "dtype" value { type: DT_FLOAT } } }
  node { name: "k" op: "Const" attr { key: "value" value { tensor { dtype: DT_FLOAT float_val: 2.5 } } } }
  node { name: "m" op: "Mul" input: "a" input: "k" }
  node { name: "o" op: "Add" input: "m" input: "b" }
  signature { inputs { name: "a" } inputs { name: "b" } outputs { name: "o" tensor: "o" } }
)pb";

GraphDef SaxpyDef(const std::string& body = "if (i < n) out[i] = 2.5f * x[i] + y[i];",
                  const std::string& fallback = "") {
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
      attr { key: "source" value { s: ")pb", source, R"pb(" } })pb",
      fallback.empty() ? ""
                       : absl::StrCat(R"pb( attr { key: "cpu_fallback" value { graph { )pb",
                                      fallback, " } } }"),
      R"pb( }
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
  EXPECT_THAT(s.status().message(), HasSubstr("cpu_fallback"));
}

TEST(CudaKernelSessionTest, WithoutAGpuTheCpuFallbackRuns) {
  RuntimeConfig config;
  config.set_use_gpu(false);
  auto s = MakeSession(SaxpyDef("if (i < n) out[i] = 2.5f * x[i] + y[i];",
                                kSaxpyFallback),
                       config);
  ASSERT_TRUE(s.ok()) << s.status();
  auto out = (*s)->Run({{"x", Tensor::FromVector<float>({1, 2, 3}, Shape({3}))},
                        {"y", Tensor::FromVector<float>({10, 20, 30}, Shape({3}))}});
  ASSERT_TRUE(out.ok()) << out.status();
  auto got = (*out)[0].flat<float>();
  EXPECT_EQ(std::vector<float>(got.begin(), got.end()),
            (std::vector<float>{12.5f, 25, 37.5f}));
}

TEST(CudaKernelSessionTest, AFallbackOfTheWrongSignatureIsABuildError) {
  const std::string one_input = R"pb(
    node { name: "a" op: "Input" attr { key: "dtype" value { type: DT_FLOAT } } }
    signature { inputs { name: "a" } outputs { name: "o" tensor: "a" } }
  )pb";
  auto g = BuildGraph(SaxpyDef("", one_input));
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(g.status().message(), HasSubstr("'saxpy'"));
  EXPECT_THAT(g.status().message(),
              HasSubstr("cpu_fallback takes (float32) and gives (float32); the "
                        "node passes (float32, float32)"));
}

TEST(CudaKernelSessionTest, AFallbackThatBreaksTheShapeRuleFailsTheStep) {
  // Gives x[0:1] where the node's rule says "shaped like x".
  const std::string sliced = R"pb(
    node { name: "a" op: "Input" attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "b" op: "Input" attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "o" op: "Slice" input: "a"
           attr { key: "begin" value { list { i: 0 } } }
           attr { key: "end" value { list { i: 1 } } } }
    signature { inputs { name: "a" } inputs { name: "b" } outputs { name: "o" tensor: "o" } }
  )pb";
  RuntimeConfig config;
  config.set_use_gpu(false);
  config.set_optimization_level(OPTIMIZATION_NONE);
  auto s = MakeSession(SaxpyDef("", sliced), config);
  ASSERT_TRUE(s.ok()) << s.status();
  auto out = (*s)->Run({{"x", Tensor::FromVector<float>({1, 2}, Shape({2}))},
                        {"y", Tensor::FromVector<float>({1, 2}, Shape({2}))}});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("'saxpy'"));
  EXPECT_THAT(out.status().message(),
              HasSubstr("cpu_fallback output 0 is float32[1] but the node's "
                        "rule gives float32[2]"));
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
  const RuntimeConfig& config = (*s)->config();  // SLUICE_GPU_GRAPHS applied
  if (!config.has_gpu_graphs() || config.gpu_graphs()) {
    EXPECT_GT((*s)->stats().gpu_graph_steps, 0);
  }
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
}  // namespace sluice::cuda_kernel_session_test
