// Host tensors in page-locked memory through the C++ API (sluice/session.h:
// Session::AllocateHostTensor, StepOptions::pinned_host_fetches): on a
// CPU-only session they are ordinary memory and run the same; on a GPU,
// pinned feeds and fetches go by one DMA with no staging (Session::Stats
// says so), in ordinary steps and in replayed CUDA graphs, and give the
// results pageable ones give. Tensors outlive their session. The GPU cases
// skip, with the reason, where no GPU is usable.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/allocator.h"
#include "device/cpu_device.h"
#include "device/external_memory.h"
#include "device/pinned_memory.h"
#include "executor/copy_kernel.h"
#include "executor/session.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "graph/loader.h"
#include "gtest/gtest.h"
#include "testing/counting_allocator.h"
#include "tests/executor/gpu_test_util.h"

namespace sluice::pinned_host_test {
namespace {

using ::testing::HasSubstr;

// z = relu(x * c) + x, x: float32[?,64], c: float32[64]; elementwise only,
// so a GPU's result is the reference's to rounding.
GraphDef ModelDef() {
  GraphDef def;
  std::string text = R"pb(
    node { name: "x" op: "Input"
           attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim: -1 dim: 64 } } } }
    node { name: "c" op: "Const"
           attr { key: "value" value { tensor { dtype: DT_FLOAT shape { dim: 64 } } } } }
    node { name: "m" op: "Mul" input: "x" input: "c" }
    node { name: "r" op: "Relu" input: "m" }
    node { name: "z" op: "Add" input: "r" input: "x" }
    signature { inputs { name: "x" } outputs { name: "z" tensor: "z" } }
  )pb";
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &def));
  TensorProto* c = def.mutable_node(1)->mutable_attr()->at("value").mutable_tensor();
  for (int i = 0; i < 64; ++i) c->add_float_val(0.25f * static_cast<float>(i % 7) - 0.5f);
  return def;
}

std::vector<float> Reference(const std::vector<float>& x) {
  std::vector<float> z(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const float c = 0.25f * static_cast<float>(i % 64 % 7) - 0.5f;
    z[i] = std::max(x[i] * c, 0.0f) + x[i];
  }
  return z;
}

// Step `step`'s input: different for every step, so a stale feed shows.
std::vector<float> Input(int rows, int step) {
  std::vector<float> x(rows * 64);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<float>((i * 7 + step * 13) % 29) / 29.0f - 0.4f +
           0.01f * static_cast<float>(step);
  }
  return x;
}

absl::StatusOr<std::unique_ptr<Session>> MakeSession(
    const RuntimeConfig& config = {}) {
  absl::StatusOr<std::unique_ptr<const Graph>> g = BuildGraph(ModelDef());
  if (!g.ok()) return g.status();
  return Session::Create(*std::move(g), config);
}

RuntimeConfig CpuOnly() {
  RuntimeConfig config;
  config.set_use_gpu(false);
  return config;
}

void Write(const Tensor& t, const std::vector<float>& values) {
  ASSERT_EQ(t.NumElements(), static_cast<int64_t>(values.size()));
  std::copy(values.begin(), values.end(), t.flat<float>().begin());
}

void ExpectValues(const Tensor& got, const std::vector<float>& want) {
  ASSERT_TRUE(got.on_host());
  ASSERT_EQ(got.NumElements(), static_cast<int64_t>(want.size()));
  auto g = got.flat<float>();
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(g[i], want[i], 1e-6f * (1 + std::abs(want[i]))) << "at " << i;
  }
}

TEST(PinnedHostTest, OnACpuSessionHostTensorsAreOrdinaryMemoryAndRunTheSame) {
  auto s = MakeSession(CpuOnly());
  ASSERT_TRUE(s.ok()) << s.status();
  absl::StatusOr<Tensor> x = (*s)->AllocateHostTensor(DT_FLOAT, Shape({3, 64}));
  ASSERT_TRUE(x.ok()) << x.status();
  EXPECT_EQ(x->allocator(), CpuAllocator());
  EXPECT_EQ(x->dtype(), DT_FLOAT);
  EXPECT_EQ(x->shape(), Shape({3, 64}));
  EXPECT_EQ((*s)->DeviceOf(*x), "/cpu:0");
  const std::vector<float> in = Input(3, 0);
  Write(*x, in);
  StepOptions pinned;
  pinned.pinned_host_fetches = true;  // nothing to pin without a GPU
  auto out = (*s)->Run({{"x", *x}}, {"z"}, pinned);
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectValues((*out)[0], Reference(in));
  auto plain = (*s)->Run({{"x", Tensor::FromVector(in, Shape({3, 64}))}}, {"z"});
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_TRUE(TensorsEqual((*out)[0], (*plain)[0]));
  const Session::Stats st = (*s)->stats();
  EXPECT_EQ(st.plans_compiled, 1);  // the option changes no CPU-only plan
  EXPECT_EQ(st.host_copies_direct, 0);
  EXPECT_EQ(st.host_copies_staged, 0);
}

TEST(PinnedHostTest, AllocateHostTensorNamesWhatIsWrong) {
  auto s = MakeSession(CpuOnly());
  ASSERT_TRUE(s.ok()) << s.status();
  absl::StatusOr<Tensor> unknown =
      (*s)->AllocateHostTensor(DT_FLOAT, Shape({-1, 64}));
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(unknown.status().message(), HasSubstr("not fully defined"));
  absl::StatusOr<Tensor> bad = (*s)->AllocateHostTensor(DT_INVALID, Shape({2}));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("dtype"));
  absl::StatusOr<Tensor> empty = (*s)->AllocateHostTensor(DT_FLOAT, Shape({0, 64}));
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->NumElements(), 0);
}

// With a GPU (the default config uses one where there is one) the tensors
// are page-locked; without, ordinary. Either way they outlive the session,
// as the caller's (AddressSanitizer checks the CPU case, the H200 run the
// cudaFreeHost after the session's devices are gone).
TEST(PinnedHostTest, HostTensorsAndPinnedFetchesOutliveTheSession) {
  Tensor x;
  Tensor z;
  const std::vector<float> in = Input(4, 1);
  {
    auto s = MakeSession();
    ASSERT_TRUE(s.ok()) << s.status();
    absl::StatusOr<Tensor> made =
        (*s)->AllocateHostTensor(DT_FLOAT, Shape({4, 64}));
    ASSERT_TRUE(made.ok()) << made.status();
    x = *made;
    Write(x, in);
    StepOptions pinned;
    pinned.pinned_host_fetches = true;
    auto out = (*s)->Run({{"x", x}}, {"z"}, pinned);
    ASSERT_TRUE(out.ok()) << out.status();
    z = (*out)[0];
  }
  ExpectValues(z, Reference(in));
  Write(x, Input(4, 2));  // still the caller's to write
  EXPECT_EQ(x.flat<float>()[0], Input(4, 2)[0]);
}

// A fetched value copied to the host lands in the allocator the step
// asks for (the plan's fetch copies, CopyKernel): shown here between two
// logical CPUs, where no GPU is needed.
TEST(PinnedHostTest, CopyTensorToACpuAllocatesWhereAsked) {
  CpuDevice host(0, 0, 1);
  CpuDevice other(1, int64_t{1} << 20, 1);
  testing::CountingAllocator counting;
  Tensor value = Tensor::FromVector<float>({1, 2, 3}, Shape({3}));
  absl::StatusOr<Tensor> there = CopyTensor(value, &host, &other, &counting);
  ASSERT_TRUE(there.ok()) << there.status();
  EXPECT_EQ(there->allocator(), &counting);
  EXPECT_EQ(counting.counts().allocations, 1);
  EXPECT_TRUE(TensorsEqual(*there, value));
  absl::StatusOr<Tensor> own = CopyTensor(value, &host, &other);
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_EQ(own->allocator(), other.allocator());
  EXPECT_TRUE(TensorsEqual(*own, value));
}

// --- On a GPU -------------------------------------------------------------

// The ordinary path (no CUDA graph): a pinned feed goes in by one DMA and a
// pinned fetch comes back by one, and the results are the pageable ones.
TEST(PinnedHostTest, PinnedFeedsAndFetchesSkipStagingInOrdinarySteps) {
  SKIP_WITHOUT_GPU();
  RuntimeConfig config;
  config.set_gpu_graphs(false);
  auto s = MakeSession(config);
  ASSERT_TRUE(s.ok()) << s.status();
  Session& session = **s;
  const std::vector<float> in = Input(32, 3);
  // Pageable first (the constant's upload happens here too).
  auto plain = session.Run({{"x", Tensor::FromVector(in, Shape({32, 64}))}}, {"z"});
  ASSERT_TRUE(plain.ok()) << plain.status();
  ExpectValues((*plain)[0], Reference(in));
  EXPECT_FALSE(IsPageLocked((*plain)[0]));
  const Session::Stats before = session.stats();
  EXPECT_GE(before.host_copies_staged, 2);  // the feed in, the result out
  auto plain2 = session.Run({{"x", Tensor::FromVector(in, Shape({32, 64}))}}, {"z"});
  ASSERT_TRUE(plain2.ok());
  const Session::Stats mid = session.stats();
  EXPECT_EQ(mid.host_copies_staged - before.host_copies_staged, 2);
  EXPECT_EQ(mid.host_copies_direct, before.host_copies_direct);

  absl::StatusOr<Tensor> x = session.AllocateHostTensor(DT_FLOAT, Shape({32, 64}));
  ASSERT_TRUE(x.ok()) << x.status();
  EXPECT_TRUE(IsPageLocked(*x));
  Write(*x, in);
  StepOptions pinned;
  pinned.pinned_host_fetches = true;
  auto out = session.Run({{"x", *x}}, {"z"}, pinned);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(IsPageLocked((*out)[0]));
  EXPECT_TRUE(TensorsEqual((*out)[0], (*plain)[0]));
  const Session::Stats after = session.stats();
  EXPECT_EQ(after.host_copies_direct - mid.host_copies_direct, 2);
  EXPECT_EQ(after.host_copies_staged, mid.host_copies_staged);
  EXPECT_EQ(after.gpu_graph_steps, 0);
}

// The caller's own page-locked memory (torch's pin_memory(), here memory
// of the pinned allocator wrapped as external memory) is found by asking
// CUDA, and released when sluice is done with it.
TEST(PinnedHostTest, ACallersOwnPinnedMemoryIsReadByOneDma) {
  SKIP_WITHOUT_GPU();
  RuntimeConfig config;
  config.set_gpu_graphs(false);
  auto s = MakeSession(config);
  ASSERT_TRUE(s.ok()) << s.status();
  Session& session = **s;
  const std::vector<float> in = Input(8, 4);
  ASSERT_TRUE(session.Run({{"x", Tensor::FromVector(in, Shape({8, 64}))}}, {"z"}).ok());
  Tensor owner = *Tensor::Create(DT_FLOAT, Shape({8, 64}), PinnedHostAllocator());
  Write(owner, in);
  int released = 0;
  absl::StatusOr<Tensor> theirs = WrapExternalMemory(
      DT_FLOAT, Shape({8, 64}), owner.raw_data(), "/cpu:0", [&] { ++released; });
  ASSERT_TRUE(theirs.ok()) << theirs.status();
  const Session::Stats before = session.stats();
  auto out = session.Run({{"x", *theirs}}, {"z"});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectValues((*out)[0], Reference(in));
  const Session::Stats after = session.stats();
  EXPECT_EQ(after.host_copies_direct - before.host_copies_direct, 1);  // in
  EXPECT_EQ(after.host_copies_staged - before.host_copies_staged, 1);  // out
  *theirs = Tensor();
  s->reset();  // the session's GPUs synchronise: every DMA is done
  EXPECT_EQ(released, 1);
}

// The replayed CUDA graph: pinned feeds are read in place by the graph's
// own copy, pageable ones copied into its buffer, in any order, and each
// step sees its own input, even when the caller rewrites one pinned buffer
// between steps.
TEST(PinnedHostTest, ReplayedGraphsReadPinnedFeedsInPlaceInAnyOrder) {
  SKIP_WITHOUT_GPU();
  auto s = MakeSession();
  ASSERT_TRUE(s.ok()) << s.status();
  Session& session = **s;
  StepOptions pinned_out;
  pinned_out.pinned_host_fetches = true;
  absl::StatusOr<Tensor> a = session.AllocateHostTensor(DT_FLOAT, Shape({16, 64}));
  absl::StatusOr<Tensor> b = session.AllocateHostTensor(DT_FLOAT, Shape({16, 64}));
  ASSERT_TRUE(a.ok() && b.ok());
  // Which feed each step uses: P = pinned a, Q = pinned b, H = pageable.
  const std::string order = "HHPHPPQHQPH";
  int pinned_replays = 0, pageable_replays = 0;
  for (size_t step = 0; step < order.size(); ++step) {
    SCOPED_TRACE(step);
    const std::vector<float> in = Input(16, static_cast<int>(step));
    Tensor feed;
    switch (order[step]) {
      case 'P': Write(*a, in); feed = *a; break;
      case 'Q': Write(*b, in); feed = *b; break;
      default: feed = Tensor::FromVector(in, Shape({16, 64})); break;
    }
    if (step >= 2) ++(order[step] == 'H' ? pageable_replays : pinned_replays);
    auto out = session.Run({{"x", feed}}, {"z"}, pinned_out);
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectValues((*out)[0], Reference(in));
    EXPECT_TRUE(IsPageLocked((*out)[0]));
  }
  const Session::Stats st = session.stats();
  EXPECT_EQ(st.gpu_graphs, 1);
  EXPECT_EQ(st.gpu_graph_steps, static_cast<int64_t>(order.size()) - 1);
  EXPECT_EQ(st.gpu_graph_direct_feeds, pinned_replays);
  EXPECT_EQ(st.gpu_graph_copied_feeds, pageable_replays);
}

// Steps of one shape with pinned fetches reuse page-locked blocks: no
// cudaHostAlloc (a cache miss) per step once the first steps have run.
TEST(PinnedHostTest, PinnedFetchesOfOneShapeReuseTheirMemory) {
  SKIP_WITHOUT_GPU();
  auto s = MakeSession();
  ASSERT_TRUE(s.ok()) << s.status();
  StepOptions pinned_out;
  pinned_out.pinned_host_fetches = true;
  const std::vector<float> in = Input(64, 8);
  Tensor x = Tensor::FromVector(in, Shape({64, 64}));
  for (int step = 0; step < 3; ++step) {
    ASSERT_TRUE((*s)->Run({{"x", x}}, {"z"}, pinned_out).ok());
  }
  const int64_t misses = PinnedHostMemoryStats().misses;
  for (int step = 0; step < 20; ++step) {
    auto out = (*s)->Run({{"x", x}}, {"z"}, pinned_out);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_TRUE(IsPageLocked((*out)[0]));
    ExpectValues((*out)[0], Reference(in));
  }  // each result is dropped before the next step
  EXPECT_EQ(PinnedHostMemoryStats().misses, misses);
}

// Pinned results may be fed straight back (a loop that keeps its data in
// pinned host memory): the same values as the pageable loop.
TEST(PinnedHostTest, APinnedFetchFedBackGivesThePageableLoopsValues) {
  SKIP_WITHOUT_GPU();
  auto s = MakeSession();
  ASSERT_TRUE(s.ok()) << s.status();
  Session& session = **s;
  StepOptions pinned_out;
  pinned_out.pinned_host_fetches = true;
  std::vector<float> want = Input(8, 7);
  Tensor pinned_x = *session.AllocateHostTensor(DT_FLOAT, Shape({8, 64}));
  Write(pinned_x, want);
  Tensor plain_x = Tensor::FromVector(want, Shape({8, 64}));
  for (int step = 0; step < 5; ++step) {
    SCOPED_TRACE(step);
    want = Reference(want);
    auto p = session.Run({{"x", pinned_x}}, {"z"}, pinned_out);
    auto h = session.Run({{"x", plain_x}}, {"z"});
    ASSERT_TRUE(p.ok() && h.ok());
    pinned_x = (*p)[0];
    plain_x = (*h)[0];
    EXPECT_TRUE(IsPageLocked(pinned_x));
    EXPECT_TRUE(TensorsEqual(pinned_x, plain_x));
    ExpectValues(pinned_x, want);
  }
}

}  // namespace
}  // namespace sluice::pinned_host_test
