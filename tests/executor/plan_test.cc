// CompilePlan's transfers (executor/plan.h): a computed value crossing
// devices is one copy a step; a constant crossing devices is a constant on
// the device that reads it, with no copy, so that a plan replayed as a CUDA
// graph has no copy inside it (a GPU kernel reading a constant in host
// memory: Resize's sizes). Two logical CPUs stand for the two devices here.
#include <memory>
#include <vector>

#include "device/cpu_device.h"
#include "executor/executor.h"
#include "executor/plan.h"
#include "google/protobuf/text_format.h"
#include "graph/loader.h"
#include "gtest/gtest.h"
#include "placer/device_spec.h"
#include "placer/partition.h"

namespace sluice::plan_test {
namespace {

// y = x + c + Neg(c); c and n on device 1, the Adds on device 0.
constexpr char kModel[] = R"pb(
  node { name: "x" op: "Input"
         attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "shape" value { shape { dim: 3 } } } }
  node { name: "c" op: "Const"
         attr { key: "value" value { tensor {
           dtype: DT_FLOAT shape { dim: 3 } float_val: 1 float_val: 2
           float_val: 4 } } } }
  node { name: "n" op: "Neg" input: "c" }
  node { name: "a" op: "Add" input: "x" input: "c" }
  node { name: "y" op: "Add" input: "a" input: "n" }
  signature { inputs { name: "x" } outputs { name: "y" tensor: "y" } }
)pb";

class PlanTransfersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GraphDef def;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(kModel, &def));
    absl::StatusOr<std::unique_ptr<const Graph>> g = BuildGraph(def);
    ASSERT_TRUE(g.ok()) << g.status();
    graph_ = *std::move(g);
    topo_.devices.push_back(MakeDeviceSpec(DeviceType::kCpu, 0, 0));
    topo_.devices.push_back(MakeDeviceSpec(DeviceType::kCpu, 1, 0));
    BuildLinks(&topo_);
    cpu0_ = std::make_unique<CpuDevice>(0, 0, 1);
    cpu1_ = std::make_unique<CpuDevice>(1, 0, 1);
    devices_ = {cpu0_.get(), cpu1_.get()};
    placement_.run_order.assign(graph_->topological_order().begin(),
                                graph_->topological_order().end());
    placement_.device_of_node.assign(graph_->num_nodes(), 0);
    for (const char* name : {"c", "n"}) {
      placement_.device_of_node[graph_->FindNode(name)->id()] = 1;
    }
    for (int id = 0; id < graph_->num_nodes(); ++id) {
      assignment_.push_back(devices_[placement_.device_of_node[id]]);
    }
    feeds_ = {TensorRef{graph_->FindNode("x")->id(), 0}};
    fetches_ = {TensorRef{graph_->FindNode("y")->id(), 0}};
    PartitionOptions po;
    po.feeds = &feeds_;
    po.fetches = &fetches_;
    po.host_device = 0;
    po.host_memory_inputs = KernelHostMemoryInputs;
    absl::StatusOr<Partitioning> parts =
        PartitionGraph(*graph_, topo_, placement_, po);
    ASSERT_TRUE(parts.ok()) << parts.status();
    parts_ = std::make_shared<const Partitioning>(*std::move(parts));
    PlanOptions o;
    o.devices = &assignment_;
    o.topology_devices = &devices_;
    o.order = &placement_.run_order;
    o.host = cpu0_.get();
    absl::StatusOr<std::unique_ptr<const ExecutionPlan>> plan =
        CompilePlan(*graph_, feeds_, fetches_, parts_, o);
    ASSERT_TRUE(plan.ok()) << plan.status();
    plan_ = *std::move(plan);
  }

  std::unique_ptr<const Graph> graph_;
  DeviceTopology topo_;
  std::unique_ptr<CpuDevice> cpu0_, cpu1_;
  std::vector<Device*> devices_;
  Placement placement_;
  DeviceAssignment assignment_;
  std::vector<TensorRef> feeds_, fetches_;
  std::shared_ptr<const Partitioning> parts_;
  std::unique_ptr<const ExecutionPlan> plan_;
};

TEST_F(PlanTransfersTest, AConstantCrossingDevicesIsAConstantThereNotACopy) {
  // The partitioning moves both c and n to device 0.
  ASSERT_EQ(parts_->transfers.size(), 2u);
  // Only n, a computed value, is copied; c is a constant on both devices.
  EXPECT_EQ(plan_->num_copies, 1);
  int copies_of_c = 0, constants_on_0 = 0;
  for (const PlanNode& pn : plan_->nodes) {
    if (pn.is_copy && pn.node->name() == "c") ++copies_of_c;
  }
  EXPECT_EQ(copies_of_c, 0);
  for (const auto& [slot, value] : plan_->constant_slots) {
    (void)value;
    for (const PlanNode& pn : plan_->nodes) {
      if (pn.device == cpu0_.get() && !pn.is_copy &&
          pn.node->name() == "a" && pn.input_slots[1] == slot) {
        ++constants_on_0;
      }
    }
  }
  EXPECT_EQ(constants_on_0, 1) << "a reads c from a constant slot";
}

TEST_F(PlanTransfersTest, TheStepReadsTheConstantsValueOnTheOtherDevice) {
  absl::StatusOr<std::vector<Tensor>> out = RunPlan(
      *plan_, {Tensor::FromVector(std::vector<float>{0.5f, -1.f, 8.f},
                                  Shape({3}))},
      nullptr);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 1u);
  // x + c - c.
  EXPECT_EQ((*out)[0].data<float>()[0], 0.5f);
  EXPECT_EQ((*out)[0].data<float>()[1], -1.f);
  EXPECT_EQ((*out)[0].data<float>()[2], 8.f);
}

}  // namespace
}  // namespace sluice::plan_test
