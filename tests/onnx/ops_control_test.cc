// ONNX If, Loop and Scan (onnx/ops_control.cc), with models built here as
// ONNX protos: subgraphs become graph attributes run by the executor (not
// unrolled), outer values a subgraph reads become inputs of the node (or
// constants of the subgraph), and an If on a constant is replaced by its
// branch. Expected values are worked by hand in the comments.
#include <vector>

#include "absl/strings/str_cat.h"
#include "executor/session.h"
#include "gmock/gmock.h"
#include "graph/loader.h"
#include "gtest/gtest.h"
#include "onnx/importer.h"
#include "onnx/onnx_pb.h"

namespace sluice::ops_control_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

void SetType(onnx::ValueInfoProto* v, const std::string& name, int elem,
             std::vector<int64_t> dims) {
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  tt->mutable_shape();  // a scalar when dims is empty
  for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
}

onnx::NodeProto* AddNode(onnx::GraphProto* g, const std::string& op,
                         std::vector<std::string> in,
                         std::vector<std::string> out) {
  onnx::NodeProto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(out[0]);
  for (const auto& s : in) n->add_input(s);
  for (const auto& s : out) n->add_output(s);
  return n;
}

onnx::GraphProto* AddGraphAttr(onnx::NodeProto* n, const std::string& name) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  a->mutable_g()->set_name(name);
  return a->mutable_g();
}

void AddFloatInit(onnx::GraphProto* g, const std::string& name,
                  std::vector<float> values, std::vector<int64_t> dims) {
  onnx::TensorProto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  for (float v : values) t->add_float_data(v);
}

absl::StatusOr<GraphDef> Import(const onnx::GraphProto& g, int opset) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  onnx::OperatorSetIdProto* id = model.add_opset_import();
  id->set_domain("");
  id->set_version(opset);
  *model.mutable_graph() = g;
  return ImportOnnxBytes(model.SerializeAsString(), "", {}, "m");
}

std::unique_ptr<Session> MakeSession(const GraphDef& def) {
  absl::StatusOr<std::unique_ptr<const Graph>> graph = BuildGraph(def);
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (!graph.ok()) return nullptr;
  RuntimeConfig config;
  config.set_use_gpu(false);
  absl::StatusOr<std::unique_ptr<Session>> s =
      Session::Create(*std::move(graph), config);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *std::move(s) : nullptr;
}

std::vector<float> Floats(const Tensor& t) {
  auto v = t.flat<float>();
  return std::vector<float>(v.begin(), v.end());
}

const NodeDef* FindOp(const GraphDef& def, const std::string& op) {
  for (const NodeDef& n : def.node()) {
    if (n.op() == op) return &n;
  }
  return nullptr;
}

// y = cond ? x + w : x - w, with x a graph input and w an initializer, both
// read by the branches from outside.
onnx::GraphProto IfGraph() {
  onnx::GraphProto g;
  SetType(g.add_input(), "cond", onnx::TensorProto::BOOL, {});
  SetType(g.add_input(), "x", onnx::TensorProto::FLOAT, {2});
  AddFloatInit(&g, "w", {10, 20}, {2});
  onnx::NodeProto* n = AddNode(&g, "If", {"cond"}, {"y"});
  onnx::GraphProto* then_g = AddGraphAttr(n, "then_branch");
  AddNode(then_g, "Add", {"x", "w"}, {"sum"});
  then_g->add_output()->set_name("sum");
  onnx::GraphProto* else_g = AddGraphAttr(n, "else_branch");
  AddNode(else_g, "Sub", {"x", "w"}, {"diff"});
  else_g->add_output()->set_name("diff");
  g.add_output()->set_name("y");
  return g;
}

TEST(OnnxControlFlowTest, IfBranchesReadOuterValuesAsInputs) {
  absl::StatusOr<GraphDef> def = Import(IfGraph(), 13);
  ASSERT_TRUE(def.ok()) << def.status();
  const NodeDef* node = FindOp(*def, "If");
  ASSERT_NE(node, nullptr);
  // cond, then the one runtime value read from outside (x); the initializer
  // w is a constant of each branch.
  EXPECT_EQ(node->input_size(), 2);
  auto s = MakeSession(*def);
  ASSERT_NE(s, nullptr);
  Tensor x = Tensor::FromVector<float>({1, 2}, Shape({2}));
  auto out = s->Run({{"cond", Tensor::Scalar<bool>(true)}, {"x", x}}, {"y"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Floats((*out)[0]), ElementsAre(11.f, 22.f));
  out = s->Run({{"cond", Tensor::Scalar<bool>(false)}, {"x", x}}, {"y"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Floats((*out)[0]), ElementsAre(-9.f, -18.f));
}

TEST(OnnxControlFlowTest, IfOnAConstantIsReplacedByItsBranch) {
  onnx::GraphProto g = IfGraph();
  // cond becomes a constant false: the else branch, inlined.
  g.mutable_input()->DeleteSubrange(0, 1);
  onnx::TensorProto* c = g.add_initializer();
  c->set_name("cond");
  c->set_data_type(onnx::TensorProto::BOOL);
  c->add_int32_data(0);
  absl::StatusOr<GraphDef> def = Import(g, 13);
  ASSERT_TRUE(def.ok()) << def.status();
  EXPECT_EQ(FindOp(*def, "If"), nullptr);
  ASSERT_NE(FindOp(*def, "Sub"), nullptr);
  auto s = MakeSession(*def);
  ASSERT_NE(s, nullptr);
  auto out = s->Run({{"x", Tensor::FromVector<float>({1, 2}, Shape({2}))}},
                    {"y"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Floats((*out)[0]), ElementsAre(-9.f, -18.f));
}

// ONNX's test_loop11 shape: y += x[i] for i < trip_count while cond, with
// x = [1, 2, 3, 4, 5] a constant inside the body; every y is scanned out.
onnx::GraphProto LoopGraph() {
  onnx::GraphProto g;
  SetType(g.add_input(), "trips", onnx::TensorProto::INT64, {});
  SetType(g.add_input(), "cond", onnx::TensorProto::BOOL, {});
  SetType(g.add_input(), "y", onnx::TensorProto::FLOAT, {1});
  onnx::NodeProto* n =
      AddNode(&g, "Loop", {"trips", "cond", "y"}, {"res_y", "res_scan"});
  onnx::GraphProto* body = AddGraphAttr(n, "body");
  SetType(body->add_input(), "i", onnx::TensorProto::INT64, {});
  SetType(body->add_input(), "cond_in", onnx::TensorProto::BOOL, {});
  SetType(body->add_input(), "y_in", onnx::TensorProto::FLOAT, {1});
  AddFloatInit(body, "x", {1, 2, 3, 4, 5}, {5});
  AddNode(body, "Identity", {"cond_in"}, {"cond_out"});
  AddNode(body, "Gather", {"x", "i"}, {"xi"});
  AddNode(body, "Add", {"y_in", "xi"}, {"y_out"});
  AddNode(body, "Identity", {"y_out"}, {"scan_out"});
  for (const char* o : {"cond_out", "y_out", "scan_out"}) {
    body->add_output()->set_name(o);
  }
  g.add_output()->set_name("res_y");
  g.add_output()->set_name("res_scan");
  return g;
}

TEST(OnnxControlFlowTest, LoopRunsItsBodyPerIteration) {
  absl::StatusOr<GraphDef> def = Import(LoopGraph(), 13);
  ASSERT_TRUE(def.ok()) << def.status();
  ASSERT_NE(FindOp(*def, "Loop"), nullptr);  // not unrolled
  auto s = MakeSession(*def);
  ASSERT_NE(s, nullptr);
  auto out = s->Run({{"trips", Tensor::Scalar<int64_t>(3)},
                     {"cond", Tensor::Scalar<bool>(true)},
                     {"y", Tensor::FromVector<float>({0}, Shape({1}))}},
                    {"res_y", "res_scan"});
  ASSERT_TRUE(out.ok()) << out.status();
  // y: 0 + 1 = 1, + 2 = 3, + 3 = 6.
  EXPECT_THAT(Floats((*out)[0]), ElementsAre(6.f));
  EXPECT_EQ((*out)[1].shape(), Shape({3, 1}));
  EXPECT_THAT(Floats((*out)[1]), ElementsAre(1.f, 3.f, 6.f));
}

// ONNX's test_scan9_sum: running sum of the rows of x [3, 2].
TEST(OnnxControlFlowTest, ScanSumsRows) {
  onnx::GraphProto g;
  SetType(g.add_input(), "initial", onnx::TensorProto::FLOAT, {2});
  SetType(g.add_input(), "x", onnx::TensorProto::FLOAT, {3, 2});
  onnx::NodeProto* n = AddNode(&g, "Scan", {"initial", "x"}, {"y", "z"});
  onnx::AttributeProto* m = n->add_attribute();
  m->set_name("num_scan_inputs");
  m->set_type(onnx::AttributeProto::INT);
  m->set_i(1);
  onnx::GraphProto* body = AddGraphAttr(n, "body");
  SetType(body->add_input(), "sum_in", onnx::TensorProto::FLOAT, {2});
  SetType(body->add_input(), "next", onnx::TensorProto::FLOAT, {2});
  AddNode(body, "Add", {"sum_in", "next"}, {"sum_out"});
  AddNode(body, "Identity", {"sum_out"}, {"scan_out"});
  body->add_output()->set_name("sum_out");
  body->add_output()->set_name("scan_out");
  g.add_output()->set_name("y");
  g.add_output()->set_name("z");
  absl::StatusOr<GraphDef> def = Import(g, 9);
  ASSERT_TRUE(def.ok()) << def.status();
  auto s = MakeSession(*def);
  ASSERT_NE(s, nullptr);
  auto out = s->Run(
      {{"initial", Tensor::FromVector<float>({0, 0}, Shape({2}))},
       {"x", Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, Shape({3, 2}))}},
      {"y", "z"});
  ASSERT_TRUE(out.ok()) << out.status();
  // [1,2] -> [4,6] -> [9,12].
  EXPECT_THAT(Floats((*out)[0]), ElementsAre(9.f, 12.f));
  EXPECT_EQ((*out)[1].shape(), Shape({3, 2}));
  EXPECT_THAT(Floats((*out)[1]), ElementsAre(1.f, 2.f, 4.f, 6.f, 9.f, 12.f));
}

TEST(OnnxControlFlowTest, UnsupportedOpsInsideASubgraphAreListed) {
  onnx::GraphProto g = LoopGraph();
  g.mutable_node(0)->mutable_attribute(0)->mutable_g()->mutable_node(1)
      ->set_op_type("NoSuchOp");
  absl::StatusOr<GraphDef> def = Import(g, 13);
  ASSERT_FALSE(def.ok());
  EXPECT_THAT(def.status().message(), HasSubstr("NoSuchOp"));
}

TEST(OnnxControlFlowTest, Scan8IsRefusedByVersion) {
  onnx::GraphProto g;
  SetType(g.add_input(), "x", onnx::TensorProto::FLOAT, {1, 3, 2});
  onnx::NodeProto* n = AddNode(&g, "Scan", {"", "x"}, {"z"});
  AddGraphAttr(n, "body");
  onnx::AttributeProto* inputs = n->add_attribute();  // required
  inputs->set_name("num_scan_inputs");
  inputs->set_type(onnx::AttributeProto::INT);
  inputs->set_i(1);
  g.add_output()->set_name("z");
  absl::StatusOr<GraphDef> def = Import(g, 8);
  ASSERT_FALSE(def.ok());
  EXPECT_THAT(def.status().message(), HasSubstr("sequence_lens"));
}

}  // namespace
}  // namespace sluice::ops_control_test
