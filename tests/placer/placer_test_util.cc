// Placer test helpers.
#include "placer_test_util.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/dtype.h"
#include "core/status_macros.h"
#include "graph/attr_map.h"
#include "graph/loader.h"
#include "gtest/gtest.h"
#include "placer/cost_model.h"

namespace sluice {
namespace testing_util {

std::string DefWriter::Input(const std::string& name,
                             std::vector<int64_t> shape) {
  NodeDef* n = def_.add_node();
  n->set_name(name);
  n->set_op("Input");
  (*n->mutable_attr())["dtype"] = MakeTypeAttr(DT_FLOAT);
  (*n->mutable_attr())["shape"] = MakeShapeAttr(Shape(shape));
  return name;
}

std::string DefWriter::Const(const std::string& name,
                             std::vector<int64_t> shape) {
  NodeDef* n = def_.add_node();
  n->set_name(name);
  n->set_op("Const");
  TensorProto t;
  t.set_dtype(DT_FLOAT);
  *t.mutable_shape() = ShapeToProto(Shape(shape));
  t.add_float_val(0);
  (*n->mutable_attr())["value"] = MakeTensorAttr(std::move(t));
  return name;
}

std::string DefWriter::Op(const std::string& op, const std::string& name,
                          std::vector<std::string> inputs) {
  NodeDef* n = def_.add_node();
  n->set_name(name);
  n->set_op(op);
  for (std::string& in : inputs) n->add_input(std::move(in));
  return name;
}

std::string DefWriter::Dense(const std::string& name, const std::string& x,
                             int64_t in, int64_t out) {
  std::string w = Const(name + "_w", {in, out});
  return Op("MatMul", name, {x, w});
}

std::unique_ptr<const Graph> DefWriter::Build() const {
  absl::StatusOr<std::unique_ptr<const Graph>> g = BuildGraph(def_);
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? *std::move(g) : nullptr;
}

std::unique_ptr<const Graph> EncoderStack(int layers, int64_t tokens,
                                          int64_t width) {
  DefWriter w;
  std::string x = w.Input("x", {tokens, width});
  for (int i = 0; i < layers; ++i) {
    const std::string p = absl::StrCat("l", i, "/");
    std::string q = w.Dense(p + "q", x, width, width);
    std::string k = w.Dense(p + "k", x, width, width);
    std::string v = w.Dense(p + "v", x, width, width);
    std::string s = w.Op("Add", p + "s", {w.Op("Abs", p + "qa", {q}),
                                          w.Op("Neg", p + "kn", {k})});
    std::string o = w.Op("Add", p + "o", {w.Op("Exp", p + "a", {s}), v});
    std::string r1 =
        w.Op("Add", p + "r1", {x, w.Dense(p + "proj", o, width, width)});
    std::string h = w.Op(
        "Relu", p + "h", {w.Dense(p + "ff1", r1, width, 4 * width)});
    x = w.Op("Add", p + "out", {r1, w.Dense(p + "ff2", h, 4 * width, width)});
  }
  return w.Build();
}

DeviceSpec Gpu(int64_t budget) {
  DeviceSpec d = MakeDeviceSpec(DeviceType::kGpu, 0, budget);
  d.memory_budget = budget;
  return d;
}

DeviceSpec Cpu(int64_t budget) {
  DeviceSpec d = MakeDeviceSpec(
      DeviceType::kCpu, 0, budget == kUnlimitedBudget ? 0 : budget);
  d.memory_budget = budget;
  return d;
}

DeviceTopology FakeTopology(std::vector<DeviceSpec> devices) {
  DeviceTopology topo;
  int gpus = 0, cpus = 0;
  for (DeviceSpec& d : devices) {
    d.index = d.type == DeviceType::kGpu ? gpus++ : cpus++;
    d.name = DeviceName{d.type, d.index}.ToString();
    topo.devices.push_back(std::move(d));
  }
  BuildLinks(&topo);
  return topo;
}

KernelQuery AllKernels(std::vector<std::string> cpu_only) {
  return [cpu_only](const Node& node, DeviceType type) -> absl::Status {
    if (type == DeviceType::kCpu) return absl::OkStatus();
    if (std::find(cpu_only.begin(), cpu_only.end(), node.op()) ==
        cpu_only.end()) {
      return absl::OkStatus();
    }
    return absl::NotFoundError("no gpu kernel (fake)");
  };
}

KernelQuery GpuRankAtMost(int max_rank, std::vector<std::string> cpu_only) {
  KernelQuery base = AllKernels(std::move(cpu_only));
  return [base, max_rank](const Node& node, DeviceType type) -> absl::Status {
    RETURN_IF_ERROR(base(node, type));
    if (type == DeviceType::kCpu) return absl::OkStatus();
    for (int i = 0; i < node.num_inputs(); ++i) {
      const Shape& s = node.input_shape(i);
      if (!s.unknown_rank() && s.rank() > max_rank) {
        return absl::UnimplementedError(
            absl::StrCat("rank ", s.rank(), " > ", max_rank));
      }
    }
    return absl::OkStatus();
  };
}

MemoryCheck RecomputeMemory(const Graph& graph, const DeviceTopology& topo,
                            const Placement& p, int64_t batch) {
  const int n = graph.num_nodes();
  const int nd = topo.num_devices();
  std::vector<int> pos(n);
  for (int i = 0; i < n; ++i) pos[p.run_order[i]] = i;
  MemoryCheck m{std::vector<int64_t>(nd, 0), std::vector<int64_t>(nd, 0)};
  // delta[d][t]: change of live bytes on d at position t (difference array).
  std::vector<std::vector<int64_t>> delta(nd, std::vector<int64_t>(n + 2, 0));
  auto live = [&](int d, int first, int last, int64_t bytes) {
    delta[d][first] += bytes;
    delta[d][last + 1] -= bytes;
  };
  for (const Node& node : graph.nodes()) {
    const int u = node.id();
    const int du = p.device_of_node[u];
    const bool is_const = node.op() == "Const";
    if (is_const) {
      m.weights[du] += static_cast<int64_t>(node.const_value()->bytes());
    }
    for (int port = 0; port < node.num_outputs(); ++port) {
      const int64_t bytes =
          EstimatedElements(node.output_shape(port), batch) *
          static_cast<int64_t>(DataTypeSize(node.output_dtype(port)));
      bool fetched = false;
      for (const GraphOutput& o : graph.outputs()) {
        fetched = fetched || (o.tensor.node == u && o.tensor.port == port);
      }
      std::vector<int> last(nd, -1);
      for (const Consumer& k : graph.consumers(u, port)) {
        int d = p.device_of_node[k.node];
        last[d] = std::max(last[d], pos[k.node]);
      }
      for (int d = 0; d < nd; ++d) {
        if (d == du) {
          if (is_const) continue;
          live(d, pos[u], fetched ? n : std::max(pos[u], last[d]), bytes);
        } else if (last[d] >= 0) {
          live(d, pos[u], last[d], bytes);  // the received copy
        }
      }
    }
  }
  for (int d = 0; d < nd; ++d) {
    int64_t level = 0;
    for (int t = 0; t <= n; ++t) {
      level += delta[d][t];
      m.peak[d] = std::max(m.peak[d], level);
    }
  }
  return m;
}

}  // namespace testing_util
}  // namespace sluice
