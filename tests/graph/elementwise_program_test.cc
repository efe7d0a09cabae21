// ElementwiseProgram and the FusedElementwise schema: valid programs parse
// and print; each invalid one is INVALID_ARGUMENT naming what is wrong,
// when the graph is built; the output shape is the inputs' broadcast.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "graph/attr_map.h"
#include "graph/elementwise_program.h"
#include "graph/loader.h"
#include "gtest/gtest.h"

namespace sluice::elementwise_program_test {
namespace {

using ::testing::HasSubstr;

TEST(ElementwiseProgramTest, ParsesAndPrintsAProgram) {
  absl::StatusOr<ElementwiseProgram> p = MakeElementwiseProgram(
      3, {"Mul", "Add", "Relu"}, {0, 1, 3, 2, 4, -1});
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->instructions.size(), 3u);
  EXPECT_EQ(p->instructions[1].op, ElementwiseOpcode::kAdd);
  EXPECT_EQ(p->instructions[1].a, 3);
  EXPECT_EQ(p->instructions[2].b, -1);
  EXPECT_EQ(p->DebugString(),
            "t0 = Mul(in0, in1); t1 = Add(t0, in2); t2 = Relu(t1)");
}

TEST(ElementwiseProgramTest, KnowsWhichOpsItHolds) {
  EXPECT_EQ(ElementwiseOpcodeOf("Maximum"), ElementwiseOpcode::kMaximum);
  EXPECT_FALSE(ElementwiseOpcodeOf("Gelu").has_value());
  EXPECT_FALSE(ElementwiseOpcodeOf("Mod").has_value());
  EXPECT_TRUE(IsBinary(ElementwiseOpcode::kPow));
  EXPECT_FALSE(IsBinary(ElementwiseOpcode::kErf));
  EXPECT_TRUE(NeedsFloat32Range(ElementwiseOpcode::kExp));
  EXPECT_FALSE(NeedsFloat32Range(ElementwiseOpcode::kAdd));
  EXPECT_EQ(ElementwiseOpName(ElementwiseOpcode::kSigmoid), "Sigmoid");
}

struct BadCase {
  int num_inputs;
  std::vector<std::string> ops;
  std::vector<int64_t> operands;
  std::string message;
};

TEST(ElementwiseProgramTest, RejectsInvalidPrograms) {
  const std::vector<BadCase> cases = {
      {1, {}, {}, "no instructions"},
      {1, {"Relu"}, {0}, "two per op"},
      {1, {"Softmax"}, {0, -1}, "'Softmax' is not an op"},
      {1, {"Relu"}, {1, -1}, "operand 1 is neither an input"},
      {1, {"Relu", "Neg"}, {0, -1, 2, -1}, "instruction 1 (Neg): operand 2"},
      {1, {"Relu"}, {0, 0}, "has a second operand 0"},
      {2, {"Add"}, {0, -1}, "operand -1"},
      {2, {"Relu"}, {0, -1}, "no instruction reads input 1"},
      {17, {"Relu"}, {0, -1}, "1 to 16"},
  };
  for (const BadCase& c : cases) {
    absl::StatusOr<ElementwiseProgram> p =
        MakeElementwiseProgram(c.num_inputs, c.ops, c.operands);
    ASSERT_FALSE(p.ok()) << c.message;
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(p.status().message(), HasSubstr(c.message));
  }
}

NodeDef* AddNode(GraphDef* def, const std::string& name, const std::string& op) {
  NodeDef* n = def->add_node();
  n->set_name(name);
  n->set_op(op);
  return n;
}

GraphDef FusedGraph(const std::vector<std::string>& ops,
                    const std::vector<int64_t>& operands) {
  GraphDef def;
  NodeDef* x = AddNode(&def, "x", "Input");
  (*x->mutable_attr())["dtype"] = MakeTypeAttr(DT_FLOAT);
  (*x->mutable_attr())["shape"] = MakeShapeAttr(Shape({2, 1, 4}));
  NodeDef* b = AddNode(&def, "b", "Input");
  (*b->mutable_attr())["dtype"] = MakeTypeAttr(DT_FLOAT);
  (*b->mutable_attr())["shape"] = MakeShapeAttr(Shape({3, 1}));
  NodeDef* f = AddNode(&def, "f", "FusedElementwise");
  f->add_input("x");
  f->add_input("b");
  (*f->mutable_attr())["ops"] = MakeStringListAttr(ops);
  (*f->mutable_attr())["operands"] = MakeIntListAttr(operands);
  return def;
}

TEST(FusedElementwiseOpTest, OutputIsTheBroadcastOfTheInputs) {
  absl::StatusOr<std::unique_ptr<const Graph>> g =
      BuildGraph(FusedGraph({"Add", "Tanh"}, {0, 1, 2, -1}));
  ASSERT_TRUE(g.ok()) << g.status();
  const Node* f = (*g)->FindNode("f");
  EXPECT_EQ(f->output_shape(0), Shape({2, 3, 4}));
  EXPECT_EQ(f->output_dtype(0), DT_FLOAT);
}

TEST(FusedElementwiseOpTest, AnInvalidProgramFailsTheGraph) {
  absl::StatusOr<std::unique_ptr<const Graph>> g =
      BuildGraph(FusedGraph({"Add", "Tanh"}, {0, 1, 3, -1}));
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(g.status().message(), HasSubstr("instruction 1 (Tanh)"));
}

}  // namespace
}  // namespace sluice::elementwise_program_test
