// CUDA graph replays (executor/gpu_graph_runner.h) running at the same time
// as ordinary steps of the same plan and as another plan's replays, from 8
// threads, every result checked exactly. The model's values are small
// integers, so every product and sum is exact in float32 and any GEMM
// algorithm gives the same bits: a result that differs from the CPU's by
// one bit is a race, not rounding. The first MatMul (M=32, N=64, K=2048) is
// one cuBLAS likes to split along K, with partial products in its workspace,
// which is what replays overlapping ordinary steps used to corrupt
// (device/gpu_graph.h). Skips, with the reason, where no GPU is usable.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstdint>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "device/discovery.h"
#include "executor/session.h"
#include "executor/step_stats.h"
#include "google/protobuf/text_format.h"
#include "graph/loader.h"
#include "gtest/gtest.h"
#include "tests/executor/gpu_test_util.h"

namespace sluice::gpu_graph_concurrency_test {
namespace {

constexpr int kRows = 32;
constexpr int kIn = 2048;
constexpr int kHidden = 64;

// Weights in {-1, 0, 1} and a bias in [-4, 4], fixed.
int W1(int k, int j) { return (k * 7 + j * 13) % 3 - 1; }
int W2(int k, int j) { return (k * 5 + j * 11 + 1) % 3 - 1; }
int Bias(int j) { return j % 9 - 4; }

// h = Relu(x @ w1 + b), z = h @ w2 + x; x float32[32,2048].
GraphDef IntegerMlpDef() {
  GraphDef def;
  const std::string text = absl::StrCat(R"pb(
    node { name: "x" op: "Input"
           attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim: )pb", kRows, " dim: ", kIn,
                                        R"pb( } } } }
    node { name: "w1" op: "Const"
           attr { key: "value" value { tensor { dtype: DT_FLOAT shape { dim: )pb",
                                        kIn, " dim: ", kHidden, R"pb( } } } } }
    node { name: "w2" op: "Const"
           attr { key: "value" value { tensor { dtype: DT_FLOAT shape { dim: )pb",
                                        kHidden, " dim: ", kIn, R"pb( } } } } }
    node { name: "b" op: "Const"
           attr { key: "value" value { tensor { dtype: DT_FLOAT shape { dim: )pb",
                                        kHidden, R"pb( } } } } }
    node { name: "mm1" op: "MatMul" input: "x" input: "w1" }
    node { name: "pre" op: "Add" input: "mm1" input: "b" }
    node { name: "h" op: "Relu" input: "pre" }
    node { name: "mm2" op: "MatMul" input: "h" input: "w2" }
    node { name: "z" op: "Add" input: "mm2" input: "x" }
    signature { inputs { name: "x" } outputs { name: "z" tensor: "z" } }
  )pb");
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &def));
  auto values = [&](int node) {
    return def.mutable_node(node)->mutable_attr()->at("value").mutable_tensor();
  };
  for (int k = 0; k < kIn; ++k) {
    for (int j = 0; j < kHidden; ++j) values(1)->add_float_val(W1(k, j));
  }
  for (int k = 0; k < kHidden; ++k) {
    for (int j = 0; j < kIn; ++j) values(2)->add_float_val(W2(k, j));
  }
  for (int j = 0; j < kHidden; ++j) values(3)->add_float_val(Bias(j));
  return def;
}

// A different input for every (thread, step): integers in [-3, 3].
std::vector<int> Input(int thread, int step) {
  std::vector<int> x(kRows * kIn);
  uint32_t s = static_cast<uint32_t>(thread * 100003 + step * 7919 + 1);
  for (int& v : x) {
    s = s * 1664525u + 1013904223u;
    v = static_cast<int>((s >> 24) % 7) - 3;
  }
  return x;
}

struct Expected {
  std::vector<int> h;  // [32,64]
  std::vector<int> z;  // [32,2048]
};

// The model in integers: |h| <= 3 * 2048 + 4 and |z| <= 64 |h| + 3, far
// below 2^24, so float32 holds every value exactly whatever the order of
// the sums.
Expected Reference(const std::vector<int>& x) {
  static const std::vector<int>* const w1 = [] {
    auto* w = new std::vector<int>(kIn * kHidden);
    for (int k = 0; k < kIn; ++k) {
      for (int j = 0; j < kHidden; ++j) (*w)[k * kHidden + j] = W1(k, j);
    }
    return w;
  }();
  static const std::vector<int>* const w2 = [] {
    auto* w = new std::vector<int>(kHidden * kIn);
    for (int k = 0; k < kHidden; ++k) {
      for (int j = 0; j < kIn; ++j) (*w)[k * kIn + j] = W2(k, j);
    }
    return w;
  }();
  Expected e{std::vector<int>(kRows * kHidden), std::vector<int>(kRows * kIn)};
  for (int r = 0; r < kRows; ++r) {
    int* h = &e.h[r * kHidden];
    for (int j = 0; j < kHidden; ++j) h[j] = Bias(j);
    for (int k = 0; k < kIn; ++k) {
      const int xv = x[r * kIn + k];
      const int* w = &(*w1)[k * kHidden];
      for (int j = 0; j < kHidden; ++j) h[j] += xv * w[j];
    }
    for (int j = 0; j < kHidden; ++j) h[j] = h[j] > 0 ? h[j] : 0;
    int* z = &e.z[r * kIn];
    for (int j = 0; j < kIn; ++j) z[j] = x[r * kIn + j];
    for (int k = 0; k < kHidden; ++k) {
      const int* w = &(*w2)[k * kIn];
      for (int j = 0; j < kIn; ++j) z[j] += h[k] * w[j];
    }
  }
  return e;
}

// "" when `got` holds exactly `want`; else where it first differs.
std::string Mismatch(const Tensor& got, const std::vector<int>& want) {
  if (!got.on_host() || got.dtype() != DT_FLOAT ||
      got.NumElements() != static_cast<int64_t>(want.size())) {
    return absl::StrCat("unexpected tensor ", got.DebugString(0));
  }
  const float* g = got.data<float>();
  for (size_t i = 0; i < want.size(); ++i) {
    if (g[i] != static_cast<float>(want[i])) {
      return absl::StrCat("element ", i, " is ", g[i], ", expected ", want[i]);
    }
  }
  return "";
}

absl::StatusOr<std::unique_ptr<Session>> IntegerMlpSession(
    RuntimeConfig config) {
  absl::StatusOr<std::unique_ptr<const Graph>> graph =
      BuildGraph(IntegerMlpDef());
  if (!graph.ok()) return graph.status();
  config.set_allow_tf32(false);  // exact float32 products
  return Session::Create(*std::move(graph), config);
}

Feeds Feed(const std::vector<int>& x) {
  std::vector<float> f(x.begin(), x.end());
  return Feeds{{"x", Tensor::FromVector(f, Shape({kRows, kIn}))}};
}

// The model and its reference agree exactly on the CPU, so a mismatch on
// the GPU below is the GPU's.
TEST(GpuGraphConcurrencyTest, IntegerModelIsExactOnTheCpu) {
  RuntimeConfig config;
  config.set_use_gpu(false);
  absl::StatusOr<std::unique_ptr<Session>> session = IntegerMlpSession(config);
  ASSERT_TRUE(session.ok()) << session.status();
  for (int step = 0; step < 3; ++step) {
    const std::vector<int> x = Input(7, step);
    absl::StatusOr<std::vector<Tensor>> out =
        (*session)->Run(Feed(x), {"z", "h"});
    ASSERT_TRUE(out.ok()) << out.status();
    const Expected want = Reference(x);
    EXPECT_EQ(Mismatch((*out)[0], want.z), "");
    EXPECT_EQ(Mismatch((*out)[1], want.h), "");
  }
}

// The three kinds of step the threads below run, one after another on one
// thread: replays of the z plan's graph, the z+h plan's own graph, and
// profiled steps kernel by kernel; each exact. The same kernels as below
// in a few seconds, for compute-sanitizer's racecheck (a shared-memory
// hazard is a kernel's, whichever thread launched it).
TEST(GpuGraphConcurrencyTest, OneThreadReplaysBothPlansAndProfilesExactly) {
  SKIP_WITHOUT_GPU();
  absl::StatusOr<std::unique_ptr<Session>> created =
      IntegerMlpSession(RuntimeConfig());
  ASSERT_TRUE(created.ok()) << created.status();
  Session& session = **created;
  for (int step = 0; step < 3; ++step) {
    for (int kind = 0; kind < 3; ++kind) {
      SCOPED_TRACE(absl::StrCat("step ", step, ", kind ", kind));
      const std::vector<int> x = Input(kind, step);
      const std::vector<std::string> fetches =
          kind == 1 ? std::vector<std::string>{"z", "h"}
                    : std::vector<std::string>{"z"};
      absl::StatusOr<std::vector<Tensor>> out;
      if (kind == 2) {
        StepStats stats;
        out = session.RunWithStats(Feed(x), fetches, &stats);
      } else {
        out = session.Run(Feed(x), fetches);
      }
      ASSERT_TRUE(out.ok()) << out.status();
      ASSERT_EQ(out->size(), fetches.size());
      const Expected want = Reference(x);
      EXPECT_EQ(Mismatch((*out)[0], want.z), "");
      if (kind == 1) {
        EXPECT_EQ(Mismatch((*out)[1], want.h), "");
      }
    }
  }
  // Both plans recorded a graph and replayed it from their second step.
  const Session::Stats st = session.stats();
  EXPECT_EQ(st.gpu_graphs, 2);
  EXPECT_GT(st.gpu_graph_steps, 0);
}

// 8 threads, 10,000 steps in all, each with its own input and checked
// exactly against the CPU:
//   threads 0, 1, 3, 4 call Run for z: the plan replays its graph, and a
//     step that arrives while another thread replays it runs the ordinary
//     way, so this plan's replays overlap its own ordinary steps;
//   threads 2 and 5 call Run for z and h: a second plan with a graph of its
//     own, recorded while the others run;
//   threads 6 and 7 call RunWithStats for z: the first plan's ordinary,
//     profiled steps, kernel by kernel, GEMMs included, throughout.
TEST(GpuGraphConcurrencyTest, ReplaysOverlapOrdinaryStepsWithIdenticalResults) {
  SKIP_WITHOUT_GPU();
  constexpr int kThreads = 8;
  // 10,000 steps in all; SLUICE_STRESS_STEPS_PER_THREAD makes it shorter
  // under compute-sanitizer, where every launch is slow.
  int steps_per_thread = 1250;
  if (const char* env = std::getenv("SLUICE_STRESS_STEPS_PER_THREAD")) {
    steps_per_thread = std::max(1, std::atoi(env));
  }
  const int kStepsPerThread = steps_per_thread;
  absl::StatusOr<std::unique_ptr<Session>> created =
      IntegerMlpSession(RuntimeConfig());
  ASSERT_TRUE(created.ok()) << created.status();
  Session& session = **created;
  // The z plan warms up and records before the threads start; the z+h plan
  // does both while they run.
  for (int step = 0; step < 2; ++step) {
    const std::vector<int> x = Input(-1, step);
    absl::StatusOr<std::vector<Tensor>> out = session.Run(Feed(x), {"z"});
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ(Mismatch((*out)[0], Reference(x).z), "");
  }
  ASSERT_EQ(session.stats().gpu_graphs, 1)
      << "the model's plan must replay as a CUDA graph on this GPU";

  std::atomic<int> bad{0};
  absl::Mutex mu;
  std::vector<std::string> first_errors;
  auto report = [&](std::string what) {
    ++bad;
    absl::MutexLock lock(&mu);
    if (first_errors.size() < 10) first_errors.push_back(std::move(what));
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const bool profiled = t >= 6;
      const bool fetch_h = t == 2 || t == 5;
      const std::vector<std::string> fetches =
          fetch_h ? std::vector<std::string>{"z", "h"}
                  : std::vector<std::string>{"z"};
      for (int step = 0; step < kStepsPerThread; ++step) {
        const std::vector<int> x = Input(t, step);
        absl::StatusOr<std::vector<Tensor>> out;
        if (profiled) {
          StepStats stats;
          out = session.RunWithStats(Feed(x), fetches, &stats);
        } else {
          out = session.Run(Feed(x), fetches);
        }
        const std::string where = absl::StrCat("thread ", t, ", step ", step);
        if (!out.ok()) {
          report(absl::StrCat(where, ": ", out.status().ToString()));
          continue;
        }
        if (out->size() != fetches.size()) {
          report(absl::StrCat(where, ": ", out->size(), " results"));
          continue;
        }
        const Expected want = Reference(x);
        std::string m = Mismatch((*out)[0], want.z);
        if (m.empty() && fetch_h) m = Mismatch((*out)[1], want.h);
        if (!m.empty()) report(absl::StrCat(where, ": ", m));
      }
    });
  }
  for (std::thread& th : threads) th.join();

  EXPECT_EQ(bad.load(), 0);
  for (const std::string& e : first_errors) ADD_FAILURE() << e;
  const Session::Stats st = session.stats();
  EXPECT_EQ(st.runs, kThreads * kStepsPerThread + 2);
  EXPECT_EQ(st.gpu_graphs, 2);
  EXPECT_GT(st.gpu_graph_steps, 0);
  // The rest ran kernel by kernel: the profiled steps, and the Run steps
  // that found their plan's graph replaying for another thread.
  std::cout << st.gpu_graph_steps << " of " << st.runs
            << " steps replayed a graph\n";
}

}  // namespace
}  // namespace sluice::gpu_graph_concurrency_test
