// GPU figures through the session, beside raw CUDA in the same run.
//
//   build/bench/gpu_bench --benchmark_counters_tabular=true
//
// BM_GpuChain: 2,000 Neg nodes on 1,024 floats on /gpu:0; us_per_node is
//   wall time per node (PyTorch eager measured 8.0 us per op there).
// BM_GpuMatMul/{4096,8192}/{fp32,tf32,bf16}: ten chained N^3 MatMuls on
//   operands made on the GPU: float32, float32 with TF32 allowed, and
//   bfloat16 in and out with float32 accumulation. TFLOP/s through sluice,
//   raw_TFLOP/s of one cuBLAS GEMM of the same types in the same process,
//   and `of_raw`, the first as a fraction of the second.
// BM_GpuFeed1GiB: a 1 GiB pageable host feed copied to the GPU through the
//   runtime's pinned staging; GB/s, beside raw pageable and pinned copies.
// Every benchmark skips, with the reason, where no GPU is usable.
#include <benchmark/benchmark.h>

#include <chrono>
#include <memory>

#include "absl/strings/str_cat.h"
#include "device/device.h"
#include "executor/session.h"
#include "graph/loader.h"

#ifdef SLUICE_WITH_CUDA
#include "bench/cuda/raw_cuda.h"
#endif

namespace sluice {
namespace {

NodeDef Node(const std::string& name, const std::string& op,
             std::initializer_list<std::string> inputs) {
  NodeDef n;
  n.set_name(name);
  n.set_op(op);
  for (const std::string& i : inputs) n.add_input(i);
  return n;
}

NodeDef InputNode(const std::string& name, std::initializer_list<int64_t> dims) {
  NodeDef n = Node(name, "Input", {});
  (*n.mutable_attr())["dtype"].set_type(DT_FLOAT);
  for (int64_t d : dims) (*n.mutable_attr())["shape"].mutable_shape()->add_dim(d);
  return n;
}

void SetIntList(NodeDef* n, const std::string& attr,
                std::initializer_list<int64_t> values) {
  auto* list = (*n->mutable_attr())[attr].mutable_list();
  for (int64_t v : values) list->add_i(v);
}

void Output(GraphDef* def, const std::string& tensor) {
  TensorInfo* out = def->mutable_signature()->add_outputs();
  out->set_name(tensor);
  out->set_tensor(tensor);
}

// Null (and the benchmark skipped) when there is no GPU.
std::unique_ptr<Session> GpuSession(benchmark::State& state,
                                    const GraphDef& def, bool tf32 = false) {
  absl::StatusOr<std::unique_ptr<const Graph>> g = BuildGraph(def);
  if (!g.ok()) {
    state.SkipWithError(std::string(g.status().message()).c_str());
    return nullptr;
  }
  RuntimeConfig config;
  config.set_allow_tf32(tf32);
  config.set_inter_op_threads(1);
  absl::StatusOr<std::unique_ptr<Session>> s =
      Session::Create(*std::move(g), config);
  if (!s.ok()) {
    state.SkipWithError(std::string(s.status().message()).c_str());
    return nullptr;
  }
  for (Device* d : (*s)->devices()) {
    if (d->type() == DeviceType::kGpu) return *std::move(s);
  }
  state.SkipWithError("no usable GPU");
  return nullptr;
}

bool RunOk(benchmark::State& state, Session& s, const Feeds& feeds) {
  auto out = s.Run(feeds);
  if (!out.ok()) state.SkipWithError(std::string(out.status().message()).c_str());
  return out.ok();
}

void BM_GpuChain(benchmark::State& state) {
  constexpr int kNodes = 2000;
  const int64_t width = state.range(0);
  GraphDef def;
  *def.add_node() = InputNode("x", {width});
  std::string prev = "x";
  for (int i = 0; i < kNodes; ++i) {
    *def.add_node() = Node(absl::StrCat("n", i), "Neg", {prev});
    prev = absl::StrCat("n", i);
  }
  def.mutable_signature()->add_inputs()->set_name("x");
  Output(&def, prev);
  std::unique_ptr<Session> s = GpuSession(state, def);
  if (s == nullptr) return;
  std::vector<float> xs(width);
  for (int64_t i = 0; i < width; ++i) xs[i] = 0.001f * static_cast<float>(i) - 0.5f;
  Feeds feeds = {{"x", Tensor::FromVector(xs, Shape({width}))}};
  if (!RunOk(state, *s, feeds)) return;
  for (auto _ : state) {
    auto out = s->Run(feeds);
    benchmark::DoNotOptimize(out);
  }
  state.counters["us_per_node"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * kNodes * 1e-6,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_GpuChain)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();

// The GEMM types sluice's CUDA MatMul has (kernels/cuda/matmul.cc).
enum class GemmType { kFp32, kTf32, kBf16 };

const char* GemmTypeName(GemmType type) {
  switch (type) {
    case GemmType::kFp32: return "fp32";
    case GemmType::kTf32: return "tf32";
    case GemmType::kBf16: return "bf16";
  }
  return "?";
}

#ifdef SLUICE_WITH_CUDA
RawGemm RawGemmFor(GemmType type) {
  switch (type) {
    case GemmType::kFp32: return RawGemm::kFp32;
    case GemmType::kTf32: return RawGemm::kTf32;
    case GemmType::kBf16: return RawGemm::kBf16;
  }
  return RawGemm::kFp32;
}
#endif

// a[i][j] = (r[j] + c[i]) / n on the GPU (then Cast to bfloat16 for bf16),
// then 10 chained MatMuls m_k = m_{k-1} @ a; the fetch is one element
// (Slice) so no big result crosses the bus.
void BM_GpuMatMul(benchmark::State& state, int64_t n, GemmType type) {
  constexpr int kChain = 10;
  GraphDef def;
  *def.add_node() = InputNode("r", {1, n});
  *def.add_node() = InputNode("c", {n, 1});
  *def.add_node() = InputNode("scale", {1});
  *def.add_node() = Node("sum", "Add", {"r", "c"});
  *def.add_node() = Node("a32", "Mul", {"sum", "scale"});
  std::string a = "a32";
  if (type == GemmType::kBf16) {
    NodeDef cast = Node("a16", "Cast", {"a32"});
    (*cast.mutable_attr())["DstT"].set_type(DT_BFLOAT16);
    *def.add_node() = cast;
    a = "a16";
  }
  std::string prev = a;
  for (int k = 0; k < kChain; ++k) {
    *def.add_node() = Node(absl::StrCat("m", k), "MatMul", {prev, a});
    prev = absl::StrCat("m", k);
  }
  NodeDef slice = Node("corner", "Slice", {prev});
  SetIntList(&slice, "begin", {0, 0});
  SetIntList(&slice, "end", {1, 1});
  *def.add_node() = slice;
  for (const char* in : {"r", "c", "scale"}) {
    def.mutable_signature()->add_inputs()->set_name(in);
  }
  Output(&def, "corner");
  std::unique_ptr<Session> s = GpuSession(state, def, type == GemmType::kTf32);
  if (s == nullptr) return;
  std::vector<float> r(n), c(n);
  for (int64_t i = 0; i < n; ++i) {
    r[i] = static_cast<float>((i * 7919) % 1000) * 1e-3f - 0.5f;
    c[i] = static_cast<float>((i * 104729) % 1000) * 1e-3f - 0.5f;
  }
  Feeds feeds = {{"r", Tensor::FromVector(r, Shape({1, n}))},
                 {"c", Tensor::FromVector(c, Shape({n, 1}))},
                 {"scale", Tensor::FromVector<float>({1.0f / n}, Shape({1}))}};
  if (!RunOk(state, *s, feeds)) return;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    auto out = s->Run(feeds);
    benchmark::DoNotOptimize(out);
  }
  [[maybe_unused]] const double seconds = std::chrono::duration<double>(
      std::chrono::steady_clock::now() - start).count();
  const double flops = 2.0 * n * n * n * kChain;
  state.counters["TFLOP/s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * flops * 1e-12,
      benchmark::Counter::kIsRate);
#ifdef SLUICE_WITH_CUDA
  absl::StatusOr<double> raw =
      RawGemmSeconds(static_cast<int>(n), RawGemmFor(type), 10);
  if (raw.ok()) {
    const double raw_tflops = 2.0 * n * n * n / *raw * 1e-12;
    state.counters["raw_TFLOP/s"] = raw_tflops;
    if (seconds > 0) {
      state.counters["of_raw"] =
          static_cast<double>(state.iterations()) * flops * 1e-12 / seconds /
          raw_tflops;
    }
  } else {
    state.SetLabel(std::string(raw.status().message()));
  }
#endif
}

// BM_GpuMatMul/N/type, by size then type.
[[maybe_unused]] const bool kMatMulsRegistered = [] {
  for (int64_t n : {4096, 8192}) {
    for (GemmType type : {GemmType::kFp32, GemmType::kTf32, GemmType::kBf16}) {
      benchmark::RegisterBenchmark(
          absl::StrCat("BM_GpuMatMul/", n, "/", GemmTypeName(type)).c_str(),
          BM_GpuMatMul, n, type)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime()
          ->MinTime(2.0);
    }
  }
  return true;
}();

void BM_GpuFeed1GiB(benchmark::State& state) {
  const int64_t n = int64_t{1} << 28;  // floats: 1 GiB
  GraphDef def;
  *def.add_node() = InputNode("x", {n});
  NodeDef slice = Node("first", "Slice", {"x"});
  SetIntList(&slice, "begin", {0});
  SetIntList(&slice, "end", {1});
  *def.add_node() = slice;
  def.mutable_signature()->add_inputs()->set_name("x");
  Output(&def, "first");
  std::unique_ptr<Session> s = GpuSession(state, def);
  if (s == nullptr) return;
  absl::StatusOr<Tensor> x = Tensor::Create(DT_FLOAT, Shape({n}));
  auto xv = x->flat<float>();
  for (int64_t i = 0; i < n; ++i) xv[i] = static_cast<float>(i & 1023);
  Feeds feeds = {{"x", *x}};
  if (!RunOk(state, *s, feeds)) return;
  for (auto _ : state) {
    auto out = s->Run(feeds);
    benchmark::DoNotOptimize(out);
  }
  state.counters["GB/s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * n * 4 * 1e-9,
      benchmark::Counter::kIsRate);
#ifdef SLUICE_WITH_CUDA
  absl::StatusOr<double> pageable = RawHostToDeviceGBps(n * 4, false, 3);
  absl::StatusOr<double> pinned = RawHostToDeviceGBps(n * 4, true, 3);
  if (pageable.ok()) state.counters["raw_pageable_GB/s"] = *pageable;
  if (pinned.ok()) state.counters["raw_pinned_GB/s"] = *pinned;
  if (!pageable.ok() || !pinned.ok()) {
    state.SetLabel(std::string(
        (!pageable.ok() ? pageable.status() : pinned.status()).message()));
  }
#endif
}
BENCHMARK(BM_GpuFeed1GiB)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

// 1 GiB made on /gpu:0 (Expand of one value), read on /gpu:1 (Identity
// requested there): the step includes one peer copy through the runtime.
// range(0) = 1 puts the Identity on /gpu:0 as well, the baseline without the
// copy; peer GB/s = 1 GiB / (t_cross - t_same), computed from the two rows.
void BM_GpuPeerCopy1GiB(benchmark::State& state) {
  const int64_t n = int64_t{1} << 28;
  const bool same_gpu = state.range(0) != 0;
  GraphDef def;
  *def.add_node() = InputNode("v", {1});
  NodeDef big = Node("big", "Expand", {"v"});
  SetIntList(&big, "shape", {n});
  big.set_device("/gpu:0");
  *def.add_node() = big;
  NodeDef id = Node("moved", "Identity", {"big"});
  id.set_device(same_gpu ? "/gpu:0" : "/gpu:1");
  *def.add_node() = id;
  NodeDef slice = Node("first", "Slice", {"moved"});
  SetIntList(&slice, "begin", {0});
  SetIntList(&slice, "end", {1});
  slice.set_device(same_gpu ? "/gpu:0" : "/gpu:1");
  *def.add_node() = slice;
  def.mutable_signature()->add_inputs()->set_name("v");
  Output(&def, "first");
  std::unique_ptr<Session> s = GpuSession(state, def);
  if (s == nullptr) return;
  if (!same_gpu &&
      s->assignment()[s->graph().FindNode("moved")->id()]->name() != "/gpu:1") {
    state.SkipWithError("needs two GPUs");
    return;
  }
  Feeds feeds = {{"v", Tensor::FromVector<float>({0.5f}, Shape({1}))}};
  if (!RunOk(state, *s, feeds)) return;
  for (auto _ : state) {
    auto out = s->Run(feeds);
    benchmark::DoNotOptimize(out);
  }
#ifdef SLUICE_WITH_CUDA
  if (!same_gpu) {
    absl::StatusOr<double> raw = RawPeerCopyGBps(n * 4, 5);
    if (raw.ok()) state.counters["raw_peer_GB/s"] = *raw;
  }
#endif
}
BENCHMARK(BM_GpuPeerCopy1GiB)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)
    ->UseRealTime()->MinTime(1.0);

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
