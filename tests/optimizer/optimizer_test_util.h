// Helpers for the optimiser tests: graphs from text, the ops a graph holds,
// the buffers its constants hold, seeded random inputs, and running a graph
// as it is (optimization level none) to compare a pass's graph with the one
// it was given.
//
//   std::unique_ptr<const Graph> g = BuildText(R"(node { ... })");
//   PassOutput out = RunPass(*MakeDeadNodePass(), *g);
//   EXPECT_EQ(OpCounts(*out.graph)["Add"], 1);
//   ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 7));
//
// The optimiser tests live in namespace sluice::optimizer_test (each in an
// unnamed namespace inside it), so they use these helpers unqualified,
// without a block of using-declarations each.
#ifndef SLUICE_TESTS_OPTIMIZER_OPTIMIZER_TEST_UTIL_H_
#define SLUICE_TESTS_OPTIMIZER_OPTIMIZER_TEST_UTIL_H_

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/tensor_proto.h"
#include "executor/session.h"
#include "google/protobuf/text_format.h"
#include "graph/attr_map.h"
#include "graph/builder.h"
#include "graph/loader.h"
#include "gtest/gtest.h"
#include "optimizer/pass.h"
#include "optimizer/pipeline.h"

namespace sluice::optimizer_test {

// A GraphDef written node by node:
//   GraphMaker m;
//   m.Input("x", {2, 3}).Const("c", {1, 2, 3}, {3}).Op("y", "Add", {"x", "c"});
//   std::unique_ptr<const Graph> g = m.Build();   // outputs: every sink
class GraphMaker {
 public:
  GraphMaker& Input(const std::string& name, const std::vector<int64_t>& dims,
                    DataType dtype = DT_FLOAT) {
    NodeDef* n = Add(name, "Input");
    (*n->mutable_attr())["dtype"] = MakeTypeAttr(dtype);
    (*n->mutable_attr())["shape"] = MakeShapeAttr(Shape(dims));
    return *this;
  }
  GraphMaker& Const(const std::string& name, const std::vector<float>& values,
                    const std::vector<int64_t>& dims) {
    return ConstTensor(name, Tensor::FromVector<float>(values, Shape(dims)));
  }
  GraphMaker& ConstInt(const std::string& name,
                       const std::vector<int64_t>& values,
                       const std::vector<int64_t>& dims) {
    return ConstTensor(name, Tensor::FromVector<int64_t>(values, Shape(dims)));
  }
  GraphMaker& ConstTensor(const std::string& name, const Tensor& value) {
    NodeDef* n = Add(name, "Const");
    (*n->mutable_attr())["value"] = MakeTensorAttr(TensorToProto(value));
    return *this;
  }
  GraphMaker& Op(const std::string& name, const std::string& op,
                 const std::vector<std::string>& inputs,
                 const std::map<std::string, AttrValue>& attrs = {}) {
    NodeDef* n = Add(name, op);
    for (const std::string& in : inputs) n->add_input(in);
    for (const auto& [k, v] : attrs) (*n->mutable_attr())[k] = v;
    return *this;
  }
  // Lists an output (then only the listed ones are outputs).
  GraphMaker& Output(const std::string& name, const std::string& tensor = "") {
    TensorInfo* info = def_.mutable_signature()->add_outputs();
    info->set_name(name);
    info->set_tensor(tensor);
    return *this;
  }
  std::unique_ptr<const Graph> Build() const {
    absl::StatusOr<std::unique_ptr<const Graph>> g = BuildGraph(def_);
    EXPECT_TRUE(g.ok()) << g.status();
    return g.ok() ? *std::move(g) : nullptr;
  }
  const GraphDef& def() const { return def_; }

 private:
  NodeDef* Add(const std::string& name, const std::string& op) {
    NodeDef* n = def_.add_node();
    n->set_name(name);
    n->set_op(op);
    return n;
  }
  GraphDef def_;
};

// n seeded values uniform in [lo, hi).
inline std::vector<float> Values(int n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// ||a - b|| / ||b|| over two float32 tensors of one shape.
inline double RelL2(const Tensor& a, const Tensor& b) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < b.NumElements(); ++i) {
    const double d = a.data<float>()[i] - b.data<float>()[i];
    num += d * d;
    den += static_cast<double>(b.data<float>()[i]) * b.data<float>()[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

inline AttrValue Ints(const std::vector<int64_t>& v) {
  return MakeIntListAttr(v);
}

inline std::unique_ptr<const Graph> BuildText(const std::string& text) {
  GraphDef def;
  if (!google::protobuf::TextFormat::ParseFromString(text, &def)) {
    ADD_FAILURE() << "bad test GraphDef:\n" << text;
    return nullptr;
  }
  absl::StatusOr<std::unique_ptr<const Graph>> g = BuildGraph(def);
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? *std::move(g) : nullptr;
}

// Runs a pass, expecting no error.
inline PassOutput RunPass(const Pass& pass, const Graph& g,
                          const PassOptions& options = {}) {
  absl::StatusOr<PassOutput> out = pass.Run(g, options);
  EXPECT_TRUE(out.ok()) << pass.name() << ": " << out.status();
  return out.ok() ? *std::move(out) : PassOutput{};
}

inline std::map<std::string, int> OpCounts(const Graph& g) {
  std::map<std::string, int> counts;
  for (const Node& n : g.nodes()) ++counts[n.op()];
  return counts;
}

// The op of the node named `name`, or "(none)".
inline std::string OpOf(const Graph& g, const std::string& name) {
  const Node* n = g.FindNode(name);
  return n == nullptr ? "(none)" : n->op();
}

// A copy of a graph (for a pipeline that takes ownership).
inline std::unique_ptr<const Graph> Copy(const Graph& g) {
  GraphSource source;
  source.base_dir = g.base_dir();
  // def() holds no Const bytes (the value Tensors do): share them.
  absl::flat_hash_map<std::string, Tensor> values;
  for (const Node& n : g.nodes()) {
    if (n.const_value() != nullptr) values.emplace(n.name(), *n.const_value());
  }
  absl::StatusOr<std::unique_ptr<const Graph>> c =
      BuildGraphSharingConsts(g.def(), source, values);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *std::move(c) : nullptr;
}

// The buffer of Const `name`'s value in `g`, to see whether what a pass
// leaves behind still holds it once `g` is moved into OptimizeGraph
// (expired: freed). Empty, with a failure, when `g` has no such Const.
inline std::weak_ptr<Buffer> ConstBuffer(const Graph& g,
                                         const std::string& name) {
  const Node* n = g.FindNode(name);
  if (n == nullptr || n->const_value() == nullptr) {
    ADD_FAILURE() << "no Const '" << name << "'";
    return {};
  }
  return n->const_value()->buffer();
}

// Seeded random values for every graph input: floats uniform in [-2, 2],
// integers in [0, 4), bools half true; unknown dimensions are `dim`.
inline Feeds RandomFeeds(const Graph& g, uint32_t seed, int64_t dim = 3) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> real(-2.0, 2.0);
  Feeds feeds;
  for (const GraphInput& in : g.inputs()) {
    std::vector<int64_t> dims;
    for (int i = 0; i < in.shape.rank(); ++i) {
      dims.push_back(in.shape.dim(i) < 0 ? dim : in.shape.dim(i));
    }
    absl::StatusOr<Tensor> t = Tensor::Create(in.dtype, Shape(dims));
    EXPECT_TRUE(t.ok()) << t.status();
    if (!t.ok()) continue;
    for (int64_t i = 0; i < t->NumElements(); ++i) {
      switch (in.dtype) {
        case DT_FLOAT:
          t->data<float>()[i] = static_cast<float>(real(rng));
          break;
        case DT_DOUBLE:
          t->data<double>()[i] = real(rng);
          break;
        case DT_INT32:
          t->data<int32_t>()[i] = static_cast<int32_t>(rng() % 4);
          break;
        case DT_INT64:
          t->data<int64_t>()[i] = static_cast<int64_t>(rng() % 4);
          break;
        case DT_BOOL:
          t->data<bool>()[i] = rng() % 2 == 0;
          break;
        default:
          ADD_FAILURE() << "no random values of " << DataTypeName(in.dtype);
      }
    }
    feeds.emplace_back(in.name, *t);
  }
  return feeds;
}

// The graph's outputs on `feeds`, run as it is (no passes), single-threaded.
inline absl::StatusOr<std::vector<Tensor>> RunAsIs(const Graph& g,
                                                   const Feeds& feeds) {
  RuntimeConfig config;
  config.set_optimization_level(OPTIMIZATION_NONE);
  config.set_use_gpu(false);
  config.set_inter_op_threads(1);
  config.set_intra_op_threads(1);
  std::unique_ptr<const Graph> copy = Copy(g);
  if (copy == nullptr) return absl::InternalError("graph does not copy");
  absl::StatusOr<std::unique_ptr<Session>> s =
      Session::Create(std::move(copy), config);
  if (!s.ok()) return s.status();
  return (*s)->Run(feeds);
}

// Per element: |a - b| <= atol + rtol * |b| for floats (NaN matches NaN,
// infinities match exactly); integers and bools exactly. Returns the first
// mismatch, or "".
inline std::string Mismatch(const Tensor& a, const Tensor& b, double rtol,
                            double atol) {
  if (a.dtype() != b.dtype()) return "dtypes differ";
  if (!(a.shape() == b.shape())) {
    return absl::StrCat("shapes differ: ", a.shape().DebugString(), " vs ",
                        b.shape().DebugString());
  }
  for (int64_t i = 0; i < a.NumElements(); ++i) {
    double x = 0, y = 0;
    switch (a.dtype()) {
      case DT_FLOAT:
        x = a.data<float>()[i];
        y = b.data<float>()[i];
        break;
      case DT_DOUBLE:
        x = a.data<double>()[i];
        y = b.data<double>()[i];
        break;
      case DT_INT32:
        x = a.data<int32_t>()[i];
        y = b.data<int32_t>()[i];
        break;
      case DT_INT64:
        if (a.data<int64_t>()[i] != b.data<int64_t>()[i]) {
          return absl::StrCat("element ", i, " differs");
        }
        continue;
      case DT_BOOL:
        x = a.data<bool>()[i];
        y = b.data<bool>()[i];
        break;
      case DT_UINT8:
        x = a.data<uint8_t>()[i];
        y = b.data<uint8_t>()[i];
        break;
      case DT_INT8:
        x = a.data<int8_t>()[i];
        y = b.data<int8_t>()[i];
        break;
      default:
        if (std::memcmp(a.raw_data(), b.raw_data(), a.bytes()) != 0) {
          return "bytes differ";
        }
        return "";
    }
    if (std::isnan(x) && std::isnan(y)) continue;
    if (std::isinf(x) || std::isinf(y)) {
      if (x == y) continue;
    } else if (std::abs(x - y) <= atol + rtol * std::abs(y)) {
      continue;
    }
    return absl::StrCat("element ", i, ": ", x, " vs ", y);
  }
  return "";
}

// Both graphs, run as they are on `feeds`, give the same outputs (by the
// optimised graph's output names, which the passes keep) within the
// tolerance.
inline void ExpectSameOutputs(const Graph& before, const Graph& after,
                              const Feeds& feeds, double rtol = 1e-4,
                              double atol = 1e-5) {
  absl::StatusOr<std::vector<Tensor>> want = RunAsIs(before, feeds);
  absl::StatusOr<std::vector<Tensor>> got = RunAsIs(after, feeds);
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(before.outputs().size(), after.outputs().size());
  ASSERT_EQ(want->size(), got->size());
  for (size_t i = 0; i < want->size(); ++i) {
    EXPECT_EQ(before.outputs()[i].name, after.outputs()[i].name);
    EXPECT_EQ(Mismatch((*got)[i], (*want)[i], rtol, atol), "")
        << "output " << after.outputs()[i].name;
  }
}

}  // namespace sluice::optimizer_test

#endif  // SLUICE_TESTS_OPTIMIZER_OPTIMIZER_TEST_UTIL_H_
