// Elementwise chains on the CPU, unfused (optimization level basic: one
// kernel per op) against fused (level all: elementwise_fusion's one
// FusedElementwise kernel), through the session API.
//
//   build/bench/elementwise_fusion_bench --benchmark_counters_tabular=true
//
// BM_Chain/<chain>/<fused>/<intra-op threads>: chain 0 is DenseNet's
// pre-activation BatchNorm, Relu(x * scale[C,1,1] + shift[C,1,1]) on
// [8, 64, 28, 28]; chain 1 is ReLU6 exported as Minimum(Maximum(x, 0), 6)
// on the same shape; chain 2 a transformer's
// Sigmoid((x + bias[H]) * scale) * x + mask[B,1,1,S] on [8, 12, 64, 64];
// chain 3 is chain 0 on [16, 128, 56, 56] (25 MB a tensor: out of cache,
// where the unfused ops pay a memory round trip per op). The first three
// fit in a core's L2 / the L3, where the unfused ops run at cache speed.
// `GB/s` counts the chain's input and output bytes once.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "executor/session.h"
#include "graph/attr_map.h"
#include "graph/loader.h"

namespace sluice {
namespace {

struct Chain {
  GraphDef def;
  std::vector<std::pair<std::string, Shape>> inputs;
  Shape out;
};

class Maker {
 public:
  explicit Maker(Chain* c) : c_(c) {}
  void Input(const std::string& name, const Shape& shape) {
    NodeDef* n = Add(name, "Input");
    (*n->mutable_attr())["dtype"] = MakeTypeAttr(DT_FLOAT);
    (*n->mutable_attr())["shape"] = MakeShapeAttr(shape);
    c_->def.mutable_signature()->add_inputs()->set_name(name);
    c_->inputs.emplace_back(name, shape);
  }
  void Op(const std::string& name, const std::string& op,
          const std::vector<std::string>& inputs) {
    NodeDef* n = Add(name, op);
    for (const std::string& in : inputs) n->add_input(in);
  }
  void Output(const std::string& tensor) {
    TensorInfo* out = c_->def.mutable_signature()->add_outputs();
    out->set_name("y");
    out->set_tensor(tensor);
  }

 private:
  NodeDef* Add(const std::string& name, const std::string& op) {
    NodeDef* n = c_->def.add_node();
    n->set_name(name);
    n->set_op(op);
    return n;
  }
  Chain* c_;
};

Chain MakeChain(int which) {
  Chain c;
  Maker m(&c);
  if (which == 0 || which == 3) {
    c.out = which == 0 ? Shape({8, 64, 28, 28}) : Shape({16, 128, 56, 56});
    m.Input("x", c.out);
    const int64_t ch = c.out.dim(1);
    m.Input("scale", Shape({ch, 1, 1}));
    m.Input("shift", Shape({ch, 1, 1}));
    m.Op("mul", "Mul", {"x", "scale"});
    m.Op("add", "Add", {"mul", "shift"});
    m.Op("relu", "Relu", {"add"});
    m.Output("relu");
  } else if (which == 1) {
    c.out = Shape({8, 64, 28, 28});
    m.Input("x", c.out);
    m.Input("zero", Shape());
    m.Input("six", Shape());
    m.Op("lo", "Maximum", {"x", "zero"});
    m.Op("hi", "Minimum", {"lo", "six"});
    m.Output("hi");
  } else {
    c.out = Shape({8, 12, 64, 64});
    m.Input("x", c.out);
    m.Input("bias", Shape({64}));
    m.Input("scale", Shape());
    m.Input("mask", Shape({8, 1, 1, 64}));
    m.Op("b", "Add", {"x", "bias"});
    m.Op("s", "Mul", {"b", "scale"});
    m.Op("g", "Sigmoid", {"s"});
    m.Op("gx", "Mul", {"g", "x"});
    m.Op("y", "Add", {"gx", "mask"});
    m.Output("y");
  }
  return c;
}

void BM_Chain(benchmark::State& state) {
  const Chain c = MakeChain(static_cast<int>(state.range(0)));
  const bool fused = state.range(1) != 0;
  absl::StatusOr<std::unique_ptr<const Graph>> g = BuildGraph(c.def);
  if (!g.ok()) {
    state.SkipWithError(std::string(g.status().message()).c_str());
    return;
  }
  RuntimeConfig config;
  config.set_use_gpu(false);
  config.set_inter_op_threads(1);
  config.set_intra_op_threads(static_cast<int>(state.range(2)));
  config.set_optimization_level(fused ? OPTIMIZATION_ALL : OPTIMIZATION_BASIC);
  absl::StatusOr<std::unique_ptr<Session>> s =
      Session::Create(*std::move(g), config);
  if (!s.ok()) {
    state.SkipWithError(std::string(s.status().message()).c_str());
    return;
  }
  int kernels = 0;
  for (const Node& n : (*s)->graph().nodes()) {
    kernels += n.op() != "Input" && n.op() != "Const";
  }
  Feeds feeds;
  int64_t bytes = c.out.num_elements() * 4;
  for (const auto& [name, shape] : c.inputs) {
    absl::StatusOr<Tensor> t = Tensor::Create(DT_FLOAT, shape);
    float* p = t->data<float>();
    for (int64_t i = 0; i < t->NumElements(); ++i) {
      p[i] = static_cast<float>((i * 37) % 101) / 25.0f - 2.0f;
    }
    bytes += t->NumElements() * 4;
    feeds.emplace_back(name, *t);
  }
  if (!(*s)->Run(feeds).ok()) {
    state.SkipWithError("first run failed");
    return;
  }
  for (auto _ : state) {
    auto out = (*s)->Run(feeds);
    benchmark::DoNotOptimize(out);
  }
  state.counters["kernels"] = kernels;
  state.counters["GB/s"] = benchmark::Counter(
      static_cast<double>(bytes) * state.iterations() / 1e9,
      benchmark::Counter::kIsRate);
}

BENCHMARK(BM_Chain)
    ->ArgsProduct({{0, 1, 2, 3}, {0, 1}, {1, 2}})
    ->ArgNames({"chain", "fused", "threads"})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
