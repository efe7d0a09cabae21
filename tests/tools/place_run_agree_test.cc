// One plan from placement to execution: for every example model and device
// set, the transfers `sluice place` reports (but the constants it says are
// held where read) are exactly the copies a step of `sluice run` (a session
// with the same config) executes.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "core/npy.h"
#include "device/discovery.h"
#include "executor/session.h"
#include "executor/step_stats.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "graph/loader.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/tools/tools_test_util.h"
#include "tools/place_command.h"

namespace sluice::place_run_agree_test {
namespace {

// (producer node, source device, destination device) -> count.
using TransferSet = std::map<std::tuple<std::string, std::string, std::string>, int>;

struct Example {
  std::string model;
  std::string input;
};

const std::vector<Example>& Examples() {
  static const auto* examples = new std::vector<Example>{
      {"mlp.pbtxt", "mlp_input.npy"},
      {"transformer_block.pb", "transformer_block_input.npy"},
      {"cnn.pb", "cnn_input.npy"},
  };
  return *examples;
}

nlohmann::json PlaceJson(const std::string& model, const std::string& config) {
  std::vector<std::string> args = {model, "--json"};
  if (!config.empty()) {
    args.push_back("--config");
    args.push_back(config);
  }
  CommandResult r = RunCommand(PlaceMain, args);
  EXPECT_EQ(r.code, 0) << r.err;
  if (r.code != 0) return nlohmann::json::object();
  return nlohmann::json::parse(r.out);
}

TransferSet PlacedTransfers(const nlohmann::json& j) {
  TransferSet out;
  for (const auto& t : j["transfers"]) {
    if (t["constant"]) continue;  // held where read: no copy in a step
    std::string tensor = t["tensor"];
    tensor = tensor.substr(0, tensor.rfind(':'));
    ++out[{tensor, t["src"], t["dst"]}];
  }
  return out;
}

TransferSet StepCopies(const std::string& model, const std::string& input,
                       const std::string& config_path) {
  RuntimeConfig config;
  if (!config_path.empty()) {
    std::ifstream f(config_path);
    std::stringstream text;
    text << f.rdbuf();
    EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text.str(), &config));
  }
  auto session = Session::CreateFromFile(model, config);
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return {};
  absl::StatusOr<Tensor> x = ReadNpy(input);
  EXPECT_TRUE(x.ok()) << x.status();
  if (!x.ok()) return {};
  StepStats stats;
  auto out = (*session)->RunWithStats({{"x", *x}}, {}, &stats);
  EXPECT_TRUE(out.ok()) << out.status();
  TransferSet copies;
  absl::MutexLock lock(&stats.mu);
  for (const NodeTiming& t : stats.nodes) {
    if (!t.is_copy) continue;
    ++copies[{t.node->name(), t.copy_source->name(), t.device->name()}];
  }
  return copies;
}

std::string Describe(const TransferSet& s) {
  std::string out;
  for (const auto& [key, n] : s) {
    const auto& [tensor, src, dst] = key;
    out += tensor + " " + src + "->" + dst + " x" + std::to_string(n) + "\n";
  }
  return out.empty() ? "(none)\n" : out;
}

// Whether some transfer goes between two devices of this type ("/cpu:").
bool CrossesBetween(const TransferSet& s, const std::string& prefix) {
  for (const auto& [key, n] : s) {
    if (std::get<1>(key).rfind(prefix, 0) == 0 &&
        std::get<2>(key).rfind(prefix, 0) == 0) {
      return true;
    }
  }
  return false;
}

// A copy of `model` in `dir` whose computing nodes ask for one of three
// devices of `kind` ("cpu" or "gpu") in turn, a third of the graph each, so
// values cross between them (external weights are copied along).
std::string SplitModel(const std::string& model, const std::string& kind,
                       const ScratchDir& dir) {
  absl::StatusOr<LoadedGraphDef> loaded = LoadGraphDef(model);
  EXPECT_TRUE(loaded.ok()) << loaded.status();
  if (!loaded.ok()) return model;
  GraphDef def = loaded->def;
  std::vector<NodeDef*> compute;
  for (NodeDef& n : *def.mutable_node()) {
    if (n.op() != "Const" && n.op() != "Input") compute.push_back(&n);
  }
  for (size_t i = 0; i < compute.size(); ++i) {
    compute[i]->set_device("/" + kind + ":" +
                           std::to_string(i * 3 / compute.size()));
  }
  const std::filesystem::path src(model);
  const std::filesystem::path weights =
      src.parent_path() / (src.stem().string() + ".weights");
  if (std::filesystem::exists(weights)) {
    std::filesystem::copy_file(weights, dir.Path(weights.filename().string()),
                               std::filesystem::copy_options::overwrite_existing);
  }
  const std::string out = dir.Path("split_" + src.stem().string() + ".pb");
  std::ofstream(out, std::ios::binary) << def.SerializeAsString();
  return out;
}

// Three devices of one kind, for SplitModel's requests.
std::string ThreeDevices(bool gpus) {
  if (gpus) {
    return "visible_gpus: 0\ngpu { index: 0 "
           "logical_devices { memory_limit { bytes: 1073741824 } } "
           "logical_devices { memory_limit { bytes: 1073741824 } } "
           "logical_devices { memory_limit { bytes: 1073741824 } } }\n";
  }
  return "use_gpu: false\nlogical_cpus {} logical_cpus {} logical_cpus {}\n";
}

void ExpectAgreement(const Example& e, const std::string& config_text,
                     const std::string& must_cross) {
  ScratchDir dir;
  const std::string cfg =
      config_text.empty() ? "" : dir.Write("run.pbtxt", config_text);
  const std::string model =
      must_cross.empty()
          ? ExampleFile(e.model)
          : SplitModel(ExampleFile(e.model),
                       must_cross == "/gpu:" ? "gpu" : "cpu", dir);
  TransferSet placed = PlacedTransfers(PlaceJson(model, cfg));
  TransferSet ran = StepCopies(model, ExampleFile(e.input), cfg);
  EXPECT_EQ(placed, ran) << e.model << " with config:\n" << config_text
                         << "place reports:\n" << Describe(placed)
                         << "the step copied:\n" << Describe(ran);
  if (!must_cross.empty()) {
    EXPECT_TRUE(CrossesBetween(placed, must_cross))
        << e.model << ": the config was meant to split it over " << must_cross
        << " devices, but:\n" << Describe(placed);
  }
}

bool HaveGpu() { return !DiscoverDevices().gpus.empty(); }

TEST(PlaceRunAgreeTest, DefaultDevices) {
  for (const Example& e : Examples()) ExpectAgreement(e, "", "");
}

TEST(PlaceRunAgreeTest, CpuOnly) {
  for (const Example& e : Examples()) ExpectAgreement(e, "use_gpu: false\n", "");
}

TEST(PlaceRunAgreeTest, SplitOverThreeLogicalCpus) {
  for (const Example& e : Examples()) {
    ExpectAgreement(e, ThreeDevices(/*gpus=*/false), "/cpu:");
  }
}

TEST(PlaceRunAgreeTest, SplitOverThreeLogicalGpus) {
  if (!HaveGpu()) GTEST_SKIP() << "no GPU: " << DiscoverDevices().no_gpu_reason;
  for (const Example& e : Examples()) {
    ExpectAgreement(e, ThreeDevices(/*gpus=*/true), "/gpu:");
  }
}

TEST(PlaceRunAgreeTest, GpuAndCpu) {
  if (!HaveGpu()) GTEST_SKIP() << "no GPU: " << DiscoverDevices().no_gpu_reason;
  // The CPU asked for by default: every node there, feeds need no copy.
  for (const Example& e : Examples()) {
    ExpectAgreement(e, "placement_strategy: PLACEMENT_MANUAL\n"
                       "default_device: \"/cpu:0\"\n", "");
  }
}

}  // namespace
}  // namespace sluice::place_run_agree_test
