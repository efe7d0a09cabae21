// sluice_onnx_node_runner: runs the ONNX backend node test cases (as
// tests/onnx/node_suite.py --generate writes them: CASE/model.onnx and
// CASE/test_data_set_N/{input,output}_K.pb) through sluice's C++ API and
// compares every output with the expected one through the tests' one
// comparator (tests/testing/compare.h): same dtype and shape, integers and
// bools exactly, NaN only against NaN, infinities by sign, other values
// within rtol 1e-3 / atol 1e-5 (|got - want| <= atol + rtol * |want|). Inputs and outputs are read as ONNX TensorProtos, so every dtype
// sluice has (bfloat16, float8, ...) is fed and compared exactly.
//
//   sluice_onnx_node_runner --cases out/onnx_node_cases-1.23.2
//       [--device gpu:0] [--filter REGEX] [--xfail FILE] [--json FILE]
//       [--write-xfail FILE] [--op-table FILE] [--quiet]
//
// Prints one line per case: "pass", "fail" (the first differing element),
// "error" (sluice's message) or "skip" (a sequence, optional, map or string
// value: not a tensor case), then the totals by opset range. With --device
// gpu:N the session places by hand on that GPU and each passing case also
// says whether every node ran on a GPU kernel ("gpu-all").
// --op-table writes a Markdown table per ONNX op: the versions sluice's
// importer implements and how many of the cases using it (their own cases,
// not the *_expanded ones) pass, and with --device or --gpu-kernels how
// many of those ran (or can run) every node on a GPU.
// --gpu-kernels (any build; no GPU needed) asks the kernel registry, for each
// passing case, whether every node of the imported graph has a GPU kernel
// that can run it, and prints the count and the ops that stand in the way:
// what a --device gpu:0 run would count as gpu-all, known before one.
// With --xfail (repeatable: the union of the lists; scripts/gpu_suite.sh
// adds tests/onnx/node_suite_xfail_gpu.txt for /gpu:0), the exit status is 1
// when a case not on the list does not pass or a case on the list passes
// (the list may only shrink), else 0.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/dtype.h"
#include "core/tensor.h"
#include "device/device.h"
#include "executor/session.h"
#include "kernels/kernel_registry.h"
#include "nlohmann/json.hpp"
#include "onnx/graph_emitter.h"
#include "onnx/onnx_pb.h"
#include "onnx/onnx_tensor.h"
#include "onnx/op_versions.h"
#include "testing/compare.h"

namespace fs = std::filesystem;

namespace sluice {
namespace {

struct Options {
  std::string cases;
  std::string device;
  std::string filter;
  std::vector<std::string> xfail;  // --xfail FILE, repeatable: their union
  std::string json;
  std::string write_xfail;
  std::string op_table;
  bool gpu_kernels = false;
  bool quiet = false;
};

struct CaseResult {
  std::string status;  // pass, fail, error, skip
  std::string reason;
  int opset = 0;
  bool gpu_all = false;
  std::set<std::string> ops;  // op_types of the model's nodes
  // --gpu-kernels: "Op(dtype...)" of each node without a GPU kernel (sluice
  // ops), with the registry's reason for the first.
  std::set<std::string> no_gpu_kernel;
};

bool ReadProto(const fs::path& path, google::protobuf::Message* msg) {
  std::ifstream in(path, std::ios::binary);
  return in && msg->ParseFromIstream(&in);
}

// The first line of a message, without the model path that load errors
// start with.
std::string FirstLine(const std::string& s) {
  std::string line = s.substr(0, s.find('\n'));
  const size_t model = line.find("model.onnx: ");
  if (model != std::string::npos) line = line.substr(model + 12);
  for (char& c : line) {
    if (c == '\t') c = ' ';
  }
  return line.size() > 300 ? line.substr(0, 300) + "..." : line;
}

// Why a value is not a tensor case ("" when it is one).
std::string NonTensorReason(const onnx::ValueInfoProto& info) {
  if (!info.type().has_tensor_type()) {
    return absl::StrCat("'", info.name(), "' is not a tensor");
  }
  if (info.type().tensor_type().elem_type() == onnx::TensorProto::STRING) {
    return absl::StrCat("'", info.name(), "' is a string tensor");
  }
  return "";
}

int DefaultOpset(const onnx::ModelProto& model) {
  for (const auto& o : model.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") {
      return static_cast<int>(o.version());
    }
  }
  return 0;
}

// One element into the list its kind compares in: integers and bools as
// int64 / uint64 (exactly, beyond 2^53 too), the floating dtypes as doubles.
// A template, so that `if constexpr` discards what T cannot compile.
template <typename T>
void AppendElement(const T& v, bool exact, std::vector<int64_t>* ints,
                   std::vector<uint64_t>* uints, std::vector<double>* floats) {
  if constexpr (std::is_same_v<T, uint64_t>) {
    uints->push_back(v);
  } else if constexpr (std::is_integral_v<T>) {
    ints->push_back(static_cast<int64_t>(v));
  } else if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {
    floats->push_back(static_cast<double>(static_cast<float>(v)));
  } else {
    // int4 / uint4 / int2 / uint2 (exact), float8 / float4, float, double.
    if (exact) {
      ints->push_back(static_cast<int64_t>(static_cast<double>(v)));
    } else {
      floats->push_back(static_cast<double>(v));
    }
  }
}

// A host tensor's elements (AppendElement). False for a dtype it cannot read.
bool ReadElements(const Tensor& t, std::vector<int64_t>* ints,
                  std::vector<uint64_t>* uints, std::vector<double>* floats) {
  const int64_t n = t.NumElements();
  const bool exact = testing::IsExactDtype(t.dtype());
  bool ok = true;
  SLUICE_SWITCH_DTYPE(
      t.dtype(),
      {
        const T* p = t.data<T>();
        for (int64_t i = 0; i < n; ++i) AppendElement<T>(p[i], exact, ints, uints, floats);
      },
      ok = false);
  return ok;
}

// The tests' one comparator (tests/testing/compare.h): integers and bools
// exactly, NaN only against NaN, infinities by sign, finite values within
// atol 1e-5 + rtol 1e-3 * |want|.
constexpr testing::Tolerance kTolerance = {1e-5, 1e-3};

std::string Compare(const Tensor& got, const Tensor& want,
                    const std::string& name) {
  if (got.dtype() != want.dtype()) {
    return absl::StrCat("output '", name, "': dtype ",
                        DataTypeName(got.dtype()), ", expected ",
                        DataTypeName(want.dtype()));
  }
  if (got.shape() != want.shape()) {
    return absl::StrCat("output '", name, "': shape ",
                        got.shape().DebugString(), ", expected ",
                        want.shape().DebugString());
  }
  std::vector<int64_t> gi, wi;
  std::vector<uint64_t> gu, wu;
  std::vector<double> gf, wf;
  if (!ReadElements(got, &gi, &gu, &gf) || !ReadElements(want, &wi, &wu, &wf)) {
    return absl::StrCat("output '", name, "': cannot compare dtype ",
                        DataTypeName(want.dtype()));
  }
  std::string why = testing::CompareTyped(gi, wi, testing::kExact, 1);
  if (why.empty()) why = testing::CompareTyped(gu, wu, testing::kExact, 1);
  if (why.empty()) why = testing::CompareTyped(gf, wf, kTolerance, 1);
  if (why.empty()) return "";
  // One line: the first differing element.
  why = why.substr(0, why.find('\n'));
  return absl::StrCat("output '", name, "': ", why);
}

std::vector<fs::path> SortedDirs(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_directory() &&
        e.path().filename().string().rfind(prefix, 0) == 0) {
      out.push_back(e.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

CaseResult Done(CaseResult r, const std::string& status,
               const std::string& reason) {
  r.status = status;
  r.reason = reason;
  return r;
}

CaseResult RunCase(const fs::path& dir, const Options& options) {
  CaseResult r;
  onnx::ModelProto model;
  if (!ReadProto(dir / "model.onnx", &model)) {
    return Done(r, "error", "cannot parse model.onnx");
  }
  r.opset = DefaultOpset(model);
  const onnx::GraphProto& graph = model.graph();
  for (const auto& node : graph.node()) {
    r.ops.insert(node.domain().empty() || node.domain() == "ai.onnx"
                     ? node.op_type()
                     : node.domain() + "." + node.op_type());
  }
  std::set<std::string> initializers;
  for (const auto& init : graph.initializer()) initializers.insert(init.name());
  std::vector<const onnx::ValueInfoProto*> inputs;
  for (const auto& in : graph.input()) {
    if (initializers.count(in.name()) > 0) continue;
    inputs.push_back(&in);
  }
  for (const auto* in : inputs) {
    std::string why = NonTensorReason(*in);
    if (!why.empty()) return Done(r, "skip", why);
  }
  for (const auto& out : graph.output()) {
    std::string why = NonTensorReason(out);
    if (!why.empty()) return Done(r, "skip", why);
  }
  RuntimeConfig config;
  if (!options.device.empty()) {
    config.set_default_device(options.device);
    config.set_placement_strategy(PLACEMENT_MANUAL);
  }
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::CreateFromFile((dir / "model.onnx").string(), config);
  if (!session.ok()) {
    r.status = "error";
    r.reason = FirstLine(std::string(session.status().message()));
    if (r.reason.find("nodes use ops") != std::string::npos ||
        r.reason.find("node uses ops") != std::string::npos) {
      // The unsupported-op list follows on the next lines: keep the first.
      std::string msg(session.status().message());
      std::vector<std::string> lines = absl::StrSplit(msg, '\n');
      if (lines.size() > 1) r.reason += " |" + FirstLine(lines[1]);
    }
    return r;
  }
  std::vector<std::string> fetches;
  for (const auto& out : graph.output()) fetches.push_back(out.name());
  for (const fs::path& set : SortedDirs(dir, "test_data_set_")) {
    Feeds feeds;
    for (size_t j = 0; j < inputs.size(); ++j) {
      fs::path file = set / absl::StrCat("input_", j, ".pb");
      onnx::TensorProto proto;
      if (!ReadProto(file, &proto)) {
        return Done(r, "error", absl::StrCat("cannot read ", file.string()));
      }
      absl::StatusOr<Tensor> t = TensorFromOnnx(proto, set.string());
      if (!t.ok()) {
        return Done(r, "error",
                    FirstLine(absl::StrCat("input ", j, ": ",
                                           t.status().message())));
      }
      feeds.push_back({SanitizeNodeName(inputs[j]->name()), *std::move(t)});
    }
    absl::StatusOr<std::vector<Tensor>> got = (*session)->Run(feeds, fetches);
    if (!got.ok()) {
      return Done(r, "error", FirstLine(std::string(got.status().message())));
    }
    for (size_t k = 0; k < fetches.size(); ++k) {
      fs::path file = set / absl::StrCat("output_", k, ".pb");
      onnx::TensorProto proto;
      if (!ReadProto(file, &proto)) {
        return Done(r, "error", absl::StrCat("cannot read ", file.string()));
      }
      absl::StatusOr<Tensor> want = TensorFromOnnx(proto, set.string());
      if (!want.ok()) {
        return Done(r, "error",
                    FirstLine(absl::StrCat("expected output ", k, ": ",
                                           want.status().message())));
      }
      std::string diff = Compare((*got)[k], *want, fetches[k]);
      if (!diff.empty()) return Done(r, "fail", diff);
    }
  }
  r.status = "pass";
  if (options.gpu_kernels) {
    for (const Node& n : (*session)->graph().nodes()) {
      if (n.op() == "Input" || n.op() == "Const") continue;
      absl::Status s = KernelRegistry::Global()->Supports(n, DeviceType::kGpu);
      if (s.ok()) continue;
      r.no_gpu_kernel.insert(n.op());
      if (r.reason.empty()) r.reason = FirstLine(std::string(s.message()));
    }
  }
  if (!options.device.empty()) {
    r.gpu_all = true;
    const Graph& g = (*session)->graph();
    const std::vector<Device*>& where = (*session)->assignment();
    for (const Node& n : g.nodes()) {
      if (n.op() == "Input" || n.op() == "Const") continue;
      const Device* d = where[n.id()];
      if (d == nullptr || d->type() != DeviceType::kGpu) {
        r.gpu_all = false;
        if (r.reason.empty()) {
          r.reason = absl::StrCat("node '", n.name(), "' (", n.op(),
                                  ") ran on ", d ? d->name() : "no device");
        }
      }
    }
  }
  return r;
}

// Case name -> reason, from a file of "NAME REASON..." lines ('#' comments).
std::map<std::string, std::string> ReadXfail(const std::string& path,
                                             bool* ok) {
  std::map<std::string, std::string> out;
  std::ifstream in(path);
  *ok = static_cast<bool>(in);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t sp = line.find_first_of(" \t");
    std::string name = line.substr(0, sp);
    std::string reason =
        sp == std::string::npos ? "" : line.substr(line.find_first_not_of(" \t", sp));
    out[name] = reason;
  }
  return out;
}

int Main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](std::string* dst) {
      if (i + 1 >= argc) {
        std::cerr << "error: " << a << " needs a value\n";
        std::exit(2);
      }
      *dst = argv[++i];
    };
    if (a == "--cases") value(&o.cases);
    else if (a == "--device") value(&o.device);
    else if (a == "--filter") value(&o.filter);
    else if (a == "--xfail") value(&o.xfail.emplace_back());
    else if (a == "--json") value(&o.json);
    else if (a == "--write-xfail") value(&o.write_xfail);
    else if (a == "--op-table") value(&o.op_table);
    else if (a == "--gpu-kernels") o.gpu_kernels = true;
    else if (a == "--quiet") o.quiet = true;
    else {
      std::cerr << "error: unknown argument '" << a << "'\n";
      return 2;
    }
  }
  if (o.cases.empty() || !fs::is_directory(o.cases)) {
    std::cerr << "error: --cases DIR (the generated node cases) is required\n";
    return 2;
  }
  std::map<std::string, std::string> xfail;
  for (const std::string& file : o.xfail) {
    bool ok = false;
    xfail.merge(ReadXfail(file, &ok));
    if (!ok) {
      std::cerr << "error: cannot read " << file << "\n";
      return 2;
    }
  }
  const std::regex filter(o.filter.empty() ? ".*" : o.filter);
  struct Range {
    const char* name;
    int lo, hi;
    int pass = 0, fail = 0, error = 0, skip = 0, gpu_all = 0;
  };
  std::vector<Range> ranges = {{"7-12", 0, 12}, {"13-18", 13, 18},
                               {"19+", 19, 1 << 30}, {"all", 0, 1 << 30}};
  nlohmann::json json = nlohmann::json::object();
  std::vector<std::string> unexpected_fail, unexpected_pass, failing;
  std::set<std::string> seen;
  // op -> {cases, passes, passes with every node on a GPU}, own cases only.
  std::map<std::string, std::array<int, 3>> per_op;
  // --gpu-kernels: passing cases with a GPU kernel for every node, and per
  // sluice op the passing cases it keeps from that (alone / with others).
  int gpu_capable = 0;
  std::map<std::string, std::array<int, 2>> blockers;
  for (const fs::path& dir : SortedDirs(o.cases, "test_")) {
    const std::string name = dir.filename().string();
    if (!std::regex_search(name, filter)) continue;
    seen.insert(name);
    CaseResult r = RunCase(dir, o);
    for (Range& rg : ranges) {
      if (r.opset < rg.lo || r.opset > rg.hi) continue;
      if (r.status == "pass") ++rg.pass;
      if (r.status == "fail") ++rg.fail;
      if (r.status == "error") ++rg.error;
      if (r.status == "skip") ++rg.skip;
      if (r.status == "pass" && r.gpu_all) ++rg.gpu_all;
    }
    if (o.gpu_kernels && r.status == "pass") {
      if (r.no_gpu_kernel.empty()) ++gpu_capable;
      for (const std::string& op : r.no_gpu_kernel) {
        ++blockers[op][r.no_gpu_kernel.size() == 1 ? 0 : 1];
      }
    }
    const bool expanded = name.find("_expanded") != std::string::npos;
    if (!expanded && r.status != "skip") {
      for (const std::string& op : r.ops) {
        std::array<int, 3>& c = per_op[op];
        ++c[0];
        if (r.status == "pass") ++c[1];
        if (r.status == "pass" && r.gpu_all) ++c[2];
        if (r.status == "pass" && o.gpu_kernels && r.no_gpu_kernel.empty()) {
          ++c[2];
        }
      }
    }
    const bool listed = xfail.count(name) > 0;
    const bool bad = r.status == "fail" || r.status == "error";
    if (bad) failing.push_back(name + "  " + r.status + ": " + r.reason);
    if (!o.xfail.empty() && bad && !listed) unexpected_fail.push_back(name);
    if (!o.xfail.empty() && r.status == "pass" && listed) {
      unexpected_pass.push_back(name);
    }
    if (!o.quiet || (bad && !listed) || (r.status == "pass" && listed)) {
      std::cout << r.status << "  " << name << " (opset " << r.opset << ")";
      if (!o.device.empty() && r.status == "pass") {
        std::cout << (r.gpu_all ? " gpu-all" : " partly-cpu");
      }
      if (o.gpu_kernels && r.status == "pass") {
        std::cout << (r.no_gpu_kernel.empty() ? " gpu-kernels" : " no-gpu-kernel");
      }
      if (!r.reason.empty()) std::cout << ": " << r.reason;
      if (bad && listed) std::cout << " [expected]";
      if (bad && !o.xfail.empty() && !listed) std::cout << " [UNEXPECTED]";
      if (r.status == "pass" && listed) {
        std::cout << " [UNEXPECTED PASS: remove it from the list]";
      }
      std::cout << "\n";
    }
    json[name] = {{"status", r.status}, {"reason", r.reason},
                  {"opset", r.opset}, {"gpu_all", r.gpu_all}};
  }
  std::printf("\nopsets  pass  fail error  skip  tensor cases  pass rate%s\n",
              o.device.empty() ? "" : "  all nodes on GPU");
  for (const Range& rg : ranges) {
    const int tensor = rg.pass + rg.fail + rg.error;
    std::printf("%-6s %5d %5d %5d %5d  %12d  %8.1f%%", rg.name, rg.pass,
                rg.fail, rg.error, rg.skip, tensor,
                tensor ? 100.0 * rg.pass / tensor : 0.0);
    if (!o.device.empty()) std::printf("  %d", rg.gpu_all);
    std::printf("\n");
  }
  if (o.gpu_kernels) {
    const int passed = ranges.back().pass;
    std::printf("\n%d of %d passing cases (%.1f%%) have a GPU kernel for every "
                "node\nops without a GPU kernel, by the passing cases they "
                "keep off the GPU (alone + with others):\n",
                gpu_capable, passed, passed ? 100.0 * gpu_capable / passed : 0.0);
    std::vector<std::pair<std::string, std::array<int, 2>>> sorted(
        blockers.begin(), blockers.end());
    std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
      return a.second[0] + a.second[1] > b.second[0] + b.second[1];
    });
    for (const auto& [op, c] : sorted) {
      std::printf("  %-24s %4d + %d\n", op.c_str(), c[0], c[1]);
    }
  }
  if (!o.json.empty()) std::ofstream(o.json) << json.dump(1) << "\n";
  if (!o.write_xfail.empty()) {
    std::ofstream out(o.write_xfail);
    out << "# ONNX backend node cases sluice is expected to fail, with why\n"
           "# (tests/onnx/node_suite_runner). The list may only shrink: a\n"
           "# listed case that passes fails the test.\n";
    for (const std::string& line : failing) out << line << "\n";
  }
  if (!o.op_table.empty()) {
    std::ofstream out(o.op_table);
    // The GPU column: cases that ran every node on a GPU (--device gpu:N)
    // or that have a GPU kernel for every node (--gpu-kernels).
    const bool gpu_column = !o.device.empty() || o.gpu_kernels;
    out << "| ONNX op | versions sluice implements | cases passing"
        << (!o.device.empty()  ? " | with every node on the GPU"
            : o.gpu_kernels    ? " | with a GPU kernel for every node"
                               : "")
        << " |\n|---|---|---|" << (gpu_column ? "---|" : "") << "\n";
    for (const auto& [op, c] : per_op) {
      std::vector<std::string> versions;
      for (int v : HandledOpVersions(op)) versions.push_back(absl::StrCat(v));
      out << "| " << op << " | "
          << (versions.empty() ? "-" : absl::StrJoin(versions, ", ")) << " | "
          << c[1] << " of " << c[0];
      if (gpu_column) out << " | " << c[2];
      out << " |\n";
    }
  }
  if (o.xfail.empty()) return 0;
  // Listed cases that were not run (a filter, or gone from the package).
  for (const auto& [name, reason] : xfail) {
    if (seen.count(name) == 0 && o.filter.empty()) {
      std::cout << "listed but not generated: " << name << "\n";
      unexpected_pass.push_back(name);
    }
  }
  std::printf("%zu unexpected failures, %zu unexpected passes\n",
              unexpected_fail.size(), unexpected_pass.size());
  return unexpected_fail.empty() && unexpected_pass.empty() ? 0 : 1;
}

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) { return sluice::Main(argc, argv); }
