// Executor overhead and CPU MatMul throughput, through the session API, on
// the CPU even where a GPU is present (bench/gpu_bench.cc covers the GPU).
//
//   build/bench/executor_bench --benchmark_counters_tabular=true
//
// BM_ElementwiseChain: 2,000 Neg nodes on 1,024 floats, one step per
// iteration; `us_per_node` is wall time per node. BM_RawNegLoop is the same
// arithmetic as a plain loop, so overhead per node = chain - raw.
// BM_MatMul/N: one N x N x N float32 MatMul, in GFLOP/s.
#include <benchmark/benchmark.h>

#include <memory>

#include "absl/strings/str_cat.h"
#include "core/process_mutexes.h"
#include "executor/session.h"
#include "graph/loader.h"

namespace sluice {
namespace {

NodeDef InputNode(const std::string& name, std::initializer_list<int64_t> dims) {
  NodeDef n;
  n.set_name(name);
  n.set_op("Input");
  AttrValue dtype;
  dtype.set_type(DT_FLOAT);
  (*n.mutable_attr())["dtype"] = dtype;
  AttrValue shape;
  for (int64_t d : dims) shape.mutable_shape()->add_dim(d);
  (*n.mutable_attr())["shape"] = shape;
  return n;
}

std::unique_ptr<Session> MakeSession(const GraphDef& def, int inter_op) {
  absl::StatusOr<std::unique_ptr<const Graph>> g = BuildGraph(def);
  if (!g.ok()) return nullptr;
  RuntimeConfig config;
  config.set_inter_op_threads(inter_op);
  config.set_use_gpu(false);  // this benchmark measures the CPU path
  absl::StatusOr<std::unique_ptr<Session>> s =
      Session::Create(*std::move(g), config);
  return s.ok() ? *std::move(s) : nullptr;
}

GraphDef ChainGraph(int n, int64_t width) {
  GraphDef def;
  *def.add_node() = InputNode("x", {width});
  std::string prev = "x";
  for (int i = 0; i < n; ++i) {
    NodeDef* node = def.add_node();
    node->set_name(absl::StrCat("n", i));
    node->set_op("Neg");
    node->add_input(prev);
    prev = node->name();
  }
  def.mutable_signature()->add_inputs()->set_name("x");
  TensorInfo* out = def.mutable_signature()->add_outputs();
  out->set_name("y");
  out->set_tensor(prev);
  return def;
}

void BM_ElementwiseChain(benchmark::State& state) {
  constexpr int kNodes = 2000;
  const int64_t width = state.range(0);
  std::unique_ptr<Session> s = MakeSession(ChainGraph(kNodes, width), 1);
  if (s == nullptr) {
    state.SkipWithError("could not build the chain");
    return;
  }
  absl::StatusOr<Tensor> x = Tensor::Zeros(DT_FLOAT, Shape({width}));
  Feeds feeds = {{"x", *x}};
  if (!s->Run(feeds).ok()) {
    state.SkipWithError("first run failed");
    return;
  }
  for (auto _ : state) {
    auto out = s->Run(feeds);
    benchmark::DoNotOptimize(out);
  }
  state.counters["us_per_node"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * kNodes * 1e-6,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_ElementwiseChain)->Arg(1024)->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The arithmetic alone: 2,000 passes of y = -x over fresh 1,024-float
// buffers, as the chain does (one allocation per node included).
void BM_RawNegLoop(benchmark::State& state) {
  constexpr int kNodes = 2000;
  const int64_t width = state.range(0);
  absl::StatusOr<Tensor> x = Tensor::Zeros(DT_FLOAT, Shape({width}));
  for (auto _ : state) {
    Tensor cur = *x;
    for (int i = 0; i < kNodes; ++i) {
      absl::StatusOr<Tensor> next = Tensor::Create(DT_FLOAT, Shape({width}));
      const float* in = cur.data<float>();
      float* o = next->data<float>();
      for (int64_t j = 0; j < width; ++j) o[j] = -in[j];
      cur = *std::move(next);
    }
    benchmark::DoNotOptimize(cur.raw_data());
  }
  state.counters["us_per_node"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * kNodes * 1e-6,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_RawNegLoop)->Arg(1024)->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_MatMul(benchmark::State& state) {
  const int64_t n = state.range(0);
  GraphDef def;
  *def.add_node() = InputNode("a", {n, n});
  *def.add_node() = InputNode("b", {n, n});
  NodeDef* mm = def.add_node();
  mm->set_name("mm");
  mm->set_op("MatMul");
  mm->add_input("a");
  mm->add_input("b");
  def.mutable_signature()->add_inputs()->set_name("a");
  def.mutable_signature()->add_inputs()->set_name("b");
  TensorInfo* out = def.mutable_signature()->add_outputs();
  out->set_name("c");
  out->set_tensor("mm");
  std::unique_ptr<Session> s = MakeSession(def, 1);
  if (s == nullptr) {
    state.SkipWithError("could not build the graph");
    return;
  }
  absl::StatusOr<Tensor> a = Tensor::Create(DT_FLOAT, Shape({n, n}));
  absl::StatusOr<Tensor> b = Tensor::Create(DT_FLOAT, Shape({n, n}));
  auto av = a->flat<float>();
  auto bv = b->flat<float>();
  for (int64_t i = 0; i < n * n; ++i) {
    av[i] = static_cast<float>((i * 7919) % 1000) * 1e-3f - 0.5f;
    bv[i] = static_cast<float>((i * 104729) % 1000) * 1e-3f - 0.5f;
  }
  Feeds feeds = {{"a", *a}, {"b", *b}};
  if (!s->Run(feeds).ok()) {
    state.SkipWithError("first run failed");
    return;
  }
  for (auto _ : state) {
    auto r = s->Run(feeds);
    benchmark::DoNotOptimize(r);
  }
  state.counters["GFLOP/s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * 2.0 * n * n * n * 1e-9,
      benchmark::Counter::kIsRate);
}
BENCHMARK(BM_MatMul)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) {
  sluice::UseReleaseMutexes();  // as the `sluice` command
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
