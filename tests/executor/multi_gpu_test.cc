// A model whose weights exceed one GPU's budget runs split across two GPUs,
// with peer copies between them, and matches the CPU. Skips, with the
// reason, where fewer than two GPUs are usable.
#include <chrono>
#include <cmath>
#include <iostream>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "device/device.h"
#include "device/discovery.h"
#include "device/gpu_device.h"
#include "executor/session.h"
#include "executor/step_stats.h"
#include "tools/trace.h"
#include "gtest/gtest.h"
#include "graph/loader.h"

namespace sluice::multi_gpu_test {
namespace {

constexpr int kWidth = 2048;   // 16 MiB of float32 weights per layer
constexpr int kLayers = 8;     // 128 MiB in all

// x [?, 2048] -> (MatMul, Tanh) x 8. Weights are deterministic and scaled so
// activations stay in tanh's useful range.
GraphDef StackDef() {
  GraphDef def;
  NodeDef* x = def.add_node();
  x->set_name("x");
  x->set_op("Input");
  (*x->mutable_attr())["dtype"].set_type(DT_FLOAT);
  (*x->mutable_attr())["shape"].mutable_shape()->add_dim(-1);
  (*x->mutable_attr())["shape"].mutable_shape()->add_dim(kWidth);
  std::string prev = "x";
  std::vector<float> w(static_cast<size_t>(kWidth) * kWidth);
  for (int l = 0; l < kLayers; ++l) {
    for (size_t i = 0; i < w.size(); ++i) {
      uint32_t h = static_cast<uint32_t>(i) * 2654435761u + l * 97u;
      w[i] = (static_cast<float>(h % 2001) / 1000.0f - 1.0f) * 0.04f;
    }
    NodeDef* c = def.add_node();
    c->set_name(absl::StrCat("w", l));
    c->set_op("Const");
    TensorProto* t = (*c->mutable_attr())["value"].mutable_tensor();
    t->set_dtype(DT_FLOAT);
    t->mutable_shape()->add_dim(kWidth);
    t->mutable_shape()->add_dim(kWidth);
    t->set_content(std::string(reinterpret_cast<const char*>(w.data()),
                               w.size() * sizeof(float)));
    NodeDef* mm = def.add_node();
    mm->set_name(absl::StrCat("mm", l));
    mm->set_op("MatMul");
    mm->add_input(prev);
    mm->add_input(c->name());
    NodeDef* act = def.add_node();
    act->set_name(absl::StrCat("act", l));
    act->set_op("Tanh");
    act->add_input(mm->name());
    prev = act->name();
  }
  def.mutable_signature()->add_inputs()->set_name("x");
  TensorInfo* out = def.mutable_signature()->add_outputs();
  out->set_name("y");
  out->set_tensor(prev);
  return def;
}

int UsableGpus() {
  int n = 0;
  for (const GpuInfo& g : DiscoverDevices().gpus) n += g.usable ? 1 : 0;
  return n;
}

absl::StatusOr<std::vector<Tensor>> RunWith(const RuntimeConfig& config,
                                            const Tensor& x,
                                            std::unique_ptr<Session>* keep) {
  absl::StatusOr<std::unique_ptr<const Graph>> g = BuildGraph(StackDef());
  if (!g.ok()) return g.status();
  absl::StatusOr<std::unique_ptr<Session>> s =
      Session::Create(*std::move(g), config);
  if (!s.ok()) return s.status();
  *keep = *std::move(s);
  return (*keep)->Run({{"x", x}});
}

TEST(MultiGpuTest, ModelLargerThanOneGpuBudgetSplitsAcrossTwoAndMatchesCpu) {
  if (UsableGpus() < 2) {
    GTEST_SKIP() << "needs two usable GPUs; this machine has " << UsableGpus()
                 << " (" << DiscoverDevices().no_gpu_reason << ")";
  }
  std::vector<float> xs(4 * kWidth);
  for (size_t i = 0; i < xs.size(); ++i) {
    xs[i] = std::sin(0.01f * static_cast<float>(i));
  }
  Tensor x = Tensor::FromVector(xs, Shape({4, kWidth}));

  RuntimeConfig cpu_config;
  cpu_config.set_use_gpu(false);
  std::unique_ptr<Session> cpu;
  auto want = RunWith(cpu_config, x, &cpu);
  ASSERT_TRUE(want.ok()) << want.status();

  RuntimeConfig gpu_config;
  gpu_config.mutable_gpu_memory_limit()->set_bytes(int64_t{96} << 20);
  gpu_config.set_log_placement(true);
  std::unique_ptr<Session> gpu;
  auto got = RunWith(gpu_config, x, &gpu);
  ASSERT_TRUE(got.ok()) << got.status();

  // Both GPUs hold part of the model.
  int on_gpu0 = 0, on_gpu1 = 0;
  for (Device* d : gpu->assignment()) {
    on_gpu0 += d->name() == "/gpu:0";
    on_gpu1 += d->name() == "/gpu:1";
  }
  EXPECT_GT(on_gpu0, 0);
  EXPECT_GT(on_gpu1, 0);
  for (const std::string& line : gpu->log()) std::cout << line << "\n";

  auto a = (*got)[0].flat<float>();
  auto b = (*want)[0].flat<float>();
  ASSERT_EQ(a.size(), b.size());
  double max_diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    max_diff = std::max(max_diff, std::abs(double(a[i]) - double(b[i])));
  }
  std::cout << "max |gpu - cpu| = " << max_diff << "\n";
  EXPECT_LT(max_diff, 1e-3);

  // Estimated against measured step time (printed for the record).
  constexpr int kSteps = 20;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kSteps; ++i) ASSERT_TRUE(gpu->Run({{"x", x}}).ok());
  double measured = std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - start).count() / kSteps;
  std::cout << "step time: estimated "
            << gpu->placement().estimated_step_seconds * 1e6 << " us, measured "
            << measured * 1e6 << " us\n";

  // A profiled step: the peer copy runs on /gpu:0's device-to-device stream
  // and is timed there, after its producer and before its consumer.
  StepStats stats;
  ASSERT_TRUE(gpu->RunWithStats({{"x", x}}, {}, &stats).ok());
  const char* trace_dir = std::getenv("SLUICE_TRACE_DIR");
  if (trace_dir != nullptr) {
    const std::string path = std::string(trace_dir) + "/two-gpu-step.json";
    EXPECT_TRUE(WriteChromeTrace(stats, path).ok());
    std::cout << "trace: " << path << "\n";
  }
  absl::MutexLock lock(&stats.mu);
  int peer_copies = 0;
  for (const NodeTiming& t : stats.nodes) {
    EXPECT_TRUE(t.gpu_timed || (!t.is_copy && t.device->type() == DeviceType::kCpu))
        << t.node->name();
    if (!t.is_copy || t.copy_source->type() != DeviceType::kGpu ||
        t.device->type() != DeviceType::kGpu) {
      continue;
    }
    ++peer_copies;
    EXPECT_EQ(t.stream, GpuStream::kDeviceToDevice);
    EXPECT_EQ(t.gpu, t.copy_source);
    EXPECT_EQ(t.bytes, int64_t{4} * kWidth * 4);
    EXPECT_GT(t.seconds(), 0.0);
    std::cout << "peer copy " << t.copy_source->name() << " -> "
              << t.device->name() << ": " << t.bytes << " bytes in "
              << t.seconds() * 1e6 << " us (GPU slice)\n";
  }
  EXPECT_GE(peer_copies, 1);
}

}  // namespace
}  // namespace sluice::multi_gpu_test
