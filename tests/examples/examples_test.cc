// End-to-end tests: each model in examples/ runs through Session and must
// match the outputs that examples/reference.py (an independent NumPy
// evaluator, float64) computed for the same model file and input.
//
// Tolerances, per element, with e the expected and a sluice's value (also in
// examples/README.md):
//   MLP, CNN:           |a - e| <= 1e-4
//   transformer block:  |a - e| <= 1e-3 * |e| + 1e-4
// The reference itself, evaluated in float32 rather than float64, stays
// within 2.4e-7 (MLP), 1.2e-7 (CNN) and 1.9e-6 (transformer) of these
// values, so the bounds allow another summation order, not a wrong op.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/npy.h"
#include "core/tensor.h"
#include "executor/session.h"
#include "graph/loader.h"
#include "gtest/gtest.h"
#include "tests/test_data.h"
#include "testing/compare.h"

namespace sluice::examples_test {
namespace {

#define EXAMPLES_ASSERT_OK_AND_ASSIGN_IMPL(var, lhs, expr) \
  auto var = (expr);                                       \
  ASSERT_TRUE(var.ok()) << var.status();                   \
  lhs = std::move(var).value()
#define EXAMPLES_CONCAT_INNER(a, b) a##b
#define EXAMPLES_CONCAT(a, b) EXAMPLES_CONCAT_INNER(a, b)
#define ASSERT_OK_AND_ASSIGN(lhs, expr) \
  EXAMPLES_ASSERT_OK_AND_ASSIGN_IMPL(   \
      EXAMPLES_CONCAT(statusor_, __LINE__), lhs, expr)

std::string ExamplePath(const std::string& file) {
  return TestDataPath(absl::StrCat("examples/", file));
}

struct Tolerance {
  double atol = 0;
  double rtol = 0;
};
constexpr Tolerance kMlpTolerance{1e-4, 0};
constexpr Tolerance kCnnTolerance{1e-4, 0};
constexpr Tolerance kTransformerTolerance{1e-4, 1e-3};

// Whether `actual` is a float32 tensor of `expected`'s shape whose every
// element matches by the tests' one comparator: within atol + rtol *
// |expected|, NaN only against NaN, infinities by sign.
::testing::AssertionResult AllClose(const Tensor& actual,
                                    const Tensor& expected, Tolerance tol) {
  if (actual.dtype() != DT_FLOAT || expected.dtype() != DT_FLOAT) {
    return ::testing::AssertionFailure()
           << "dtypes " << DataTypeName(actual.dtype()) << " and "
           << DataTypeName(expected.dtype()) << ", want float32";
  }
  if (actual.shape() != expected.shape()) {
    return ::testing::AssertionFailure()
           << "shape " << actual.shape().DebugString() << ", want "
           << expected.shape().DebugString();
  }
  absl::Span<const float> a = actual.flat<float>();
  absl::Span<const float> e = expected.flat<float>();
  // The tests' one comparator (testing/compare.h): NaN only against NaN,
  // infinities by sign, the rest within atol + rtol * |expected|.
  const std::string why = testing::CompareTyped(
      std::vector<float>(a.begin(), a.end()), std::vector<float>(e.begin(), e.end()),
      testing::Tolerance{tol.atol, tol.rtol}, 3);
  if (why.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << why;
}

// A copy of rows [begin, end) of the first dimension.
Tensor Rows(const Tensor& t, int64_t begin, int64_t end) {
  DimVector dims = t.shape().dims();
  int64_t row = t.NumElements() / dims[0];
  dims[0] = end - begin;
  Shape shape(dims);
  absl::StatusOr<Tensor> out = Tensor::Create(t.dtype(), shape);
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return Tensor();
  std::memcpy(out->raw_data(),
              static_cast<const char*>(t.raw_data()) +
                  begin * row * DataTypeSize(t.dtype()),
              out->bytes());
  return *out;
}

// Single-threaded and default (parallel) execution must agree with NumPy.
std::vector<std::pair<std::string, RuntimeConfig>> Configs() {
  RuntimeConfig single;
  single.set_inter_op_threads(1);
  single.set_intra_op_threads(1);
  return {{"default config", RuntimeConfig()},
          {"one inter-op and one intra-op thread", single}};
}

TEST(ExamplesTest, EveryExampleLoadsAndValidates) {
  struct Case {
    std::string file;
    std::vector<std::string> outputs;
  };
  for (const Case& c : std::vector<Case>{
           {"mlp.pbtxt", {"logits", "probs"}},
           {"transformer_block.pb", {"y"}},
           {"cnn.pb", {"logits"}}}) {
    SCOPED_TRACE(c.file);
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<const Graph> graph,
                         LoadGraph(ExamplePath(c.file)));
    ASSERT_EQ(graph->inputs().size(), 1u);
    EXPECT_EQ(graph->inputs()[0].name, "x");
    EXPECT_EQ(graph->inputs()[0].dtype, DT_FLOAT);
    ASSERT_EQ(graph->outputs().size(), c.outputs.size());
    for (size_t i = 0; i < c.outputs.size(); ++i) {
      EXPECT_EQ(graph->outputs()[i].name, c.outputs[i]);
      EXPECT_EQ(graph->outputs()[i].dtype, DT_FLOAT);
    }
  }
}

TEST(ExamplesTest, MlpMatchesNumpyReference) {
  ASSERT_OK_AND_ASSIGN(Tensor x, ReadNpy(ExamplePath("mlp_input.npy")));
  ASSERT_OK_AND_ASSIGN(Tensor logits,
                       ReadNpy(ExamplePath("mlp_logits_expected.npy")));
  ASSERT_OK_AND_ASSIGN(Tensor probs,
                       ReadNpy(ExamplePath("mlp_probs_expected.npy")));
  for (const auto& [label, config] : Configs()) {
    SCOPED_TRACE(label);
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session,
                         Session::CreateFromFile(ExamplePath("mlp.pbtxt"),
                                                 config));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out,
                         session->Run({{"x", x}}, {"logits", "probs"}));
    ASSERT_EQ(out.size(), 2u);
    EXPECT_TRUE(AllClose(out[0], logits, kMlpTolerance)) << "logits";
    EXPECT_TRUE(AllClose(out[1], probs, kMlpTolerance)) << "probs";
  }
}

TEST(ExamplesTest, MlpWithNoFetchesReturnsEveryOutputInSignatureOrder) {
  ASSERT_OK_AND_ASSIGN(Tensor x, ReadNpy(ExamplePath("mlp_input.npy")));
  ASSERT_OK_AND_ASSIGN(Tensor logits,
                       ReadNpy(ExamplePath("mlp_logits_expected.npy")));
  ASSERT_OK_AND_ASSIGN(Tensor probs,
                       ReadNpy(ExamplePath("mlp_probs_expected.npy")));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session,
                       Session::CreateFromFile(ExamplePath("mlp.pbtxt")));
  EXPECT_EQ(session->DefaultFetchNames(),
            (std::vector<std::string>{"logits", "probs"}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, session->Run({{"x", x}}));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(AllClose(out[0], logits, kMlpTolerance)) << "logits";
  EXPECT_TRUE(AllClose(out[1], probs, kMlpTolerance)) << "probs";
}

// The batch dimension is unknown in the file: each batch size gets its own
// plan, and going back to a size seen before must still be right.
TEST(ExamplesTest, MlpRunsWithEveryBatchSize) {
  ASSERT_OK_AND_ASSIGN(Tensor x, ReadNpy(ExamplePath("mlp_input.npy")));
  ASSERT_OK_AND_ASSIGN(Tensor probs,
                       ReadNpy(ExamplePath("mlp_probs_expected.npy")));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session,
                       Session::CreateFromFile(ExamplePath("mlp.pbtxt")));
  struct Batch {
    int64_t begin, end;
  };
  for (Batch b : {Batch{0, 4}, Batch{1, 2}, Batch{1, 4}, Batch{0, 4},
                  Batch{3, 4}}) {
    SCOPED_TRACE(absl::StrCat("rows [", b.begin, ", ", b.end, ")"));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out,
                         session->Run({{"x", Rows(x, b.begin, b.end)}},
                                      {"probs"}));
    ASSERT_EQ(out.size(), 1u);
    EXPECT_TRUE(AllClose(out[0], Rows(probs, b.begin, b.end), kMlpTolerance));
  }
}

TEST(ExamplesTest, TransformerBlockMatchesNumpyReference) {
  ASSERT_OK_AND_ASSIGN(Tensor x,
                       ReadNpy(ExamplePath("transformer_block_input.npy")));
  ASSERT_OK_AND_ASSIGN(Tensor y,
                       ReadNpy(ExamplePath("transformer_block_expected.npy")));
  for (const auto& [label, config] : Configs()) {
    SCOPED_TRACE(label);
    ASSERT_OK_AND_ASSIGN(
        std::unique_ptr<Session> session,
        Session::CreateFromFile(ExamplePath("transformer_block.pb"), config));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out,
                         session->Run({{"x", x}}, {"y"}));
    ASSERT_EQ(out.size(), 1u);
    EXPECT_TRUE(AllClose(out[0], y, kTransformerTolerance));
  }
}

TEST(ExamplesTest, CnnMatchesNumpyReference) {
  ASSERT_OK_AND_ASSIGN(Tensor x, ReadNpy(ExamplePath("cnn_input.npy")));
  ASSERT_OK_AND_ASSIGN(Tensor logits, ReadNpy(ExamplePath("cnn_expected.npy")));
  for (const auto& [label, config] : Configs()) {
    SCOPED_TRACE(label);
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session,
                         Session::CreateFromFile(ExamplePath("cnn.pb"), config));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out,
                         session->Run({{"x", x}}, {"logits"}));
    ASSERT_EQ(out.size(), 1u);
    EXPECT_TRUE(AllClose(out[0], logits, kCnnTolerance));
  }
}

// Four threads call Run on one session at once, alternating between two
// inputs so that a result handed to the wrong caller cannot pass: input A
// must give the NumPy reference, input B (A scaled by -0.5) what the same
// session gave for it before the threads started.
void RunsConcurrentlyFromFourThreads(const std::string& model,
                                     const std::string& input,
                                     const std::string& expected,
                                     const std::string& output,
                                     Tolerance tolerance) {
  constexpr int kThreads = 4;
  constexpr int kRunsPerThread = 4;
  constexpr Tolerance kSameSession{1e-5, 1e-5};
  ASSERT_OK_AND_ASSIGN(Tensor input_a, ReadNpy(ExamplePath(input)));
  ASSERT_OK_AND_ASSIGN(Tensor expected_a, ReadNpy(ExamplePath(expected)));
  ASSERT_OK_AND_ASSIGN(Tensor input_b,
                       Tensor::Create(DT_FLOAT, input_a.shape()));
  for (int64_t i = 0; i < input_a.NumElements(); ++i) {
    input_b.flat<float>()[i] = -0.5f * input_a.flat<float>()[i];
  }
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session,
                       Session::CreateFromFile(ExamplePath(model)));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> baseline_b,
                       session->Run({{"x", input_b}}, {output}));
  ASSERT_EQ(baseline_b.size(), 1u);
  ASSERT_FALSE(AllClose(baseline_b[0], expected_a, tolerance))
      << "inputs A and B must give different outputs";

  // results[t][r]: thread t's r-th run; the input is A when (t + r) is even.
  std::vector<std::vector<absl::StatusOr<std::vector<Tensor>>>> results(
      kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRunsPerThread; ++r) {
        const Tensor& x = (t + r) % 2 == 0 ? input_a : input_b;
        results[t].push_back(session->Run({{"x", x}}, {output}));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();

  for (int t = 0; t < kThreads; ++t) {
    for (int r = 0; r < kRunsPerThread; ++r) {
      SCOPED_TRACE(absl::StrCat("thread ", t, ", run ", r));
      const absl::StatusOr<std::vector<Tensor>>& out = results[t][r];
      ASSERT_TRUE(out.ok()) << out.status();
      ASSERT_EQ(out->size(), 1u);
      if ((t + r) % 2 == 0) {
        EXPECT_TRUE(AllClose((*out)[0], expected_a, tolerance));
      } else {
        EXPECT_TRUE(AllClose((*out)[0], baseline_b[0], kSameSession));
      }
    }
  }
}

TEST(ExamplesTest, TransformerBlockRunsConcurrentlyFromFourThreads) {
  RunsConcurrentlyFromFourThreads("transformer_block.pb",
                                  "transformer_block_input.npy",
                                  "transformer_block_expected.npy", "y",
                                  kTransformerTolerance);
}

// The CNN's convolutions run on cuDNN on a GPU: ordinary steps from four
// threads share the device's cuDNN handle (serialised) while the plan's
// recorded CUDA graph replays beside them.
TEST(ExamplesTest, CnnRunsConcurrentlyFromFourThreads) {
  RunsConcurrentlyFromFourThreads("cnn.pb", "cnn_input.npy", "cnn_expected.npy",
                                  "logits", kCnnTolerance);
}

}  // namespace
}  // namespace sluice::examples_test
