// `sluice inspect MODEL [--json] [--optimized [--optimization-level L]]`: a
// model's inputs and outputs (dtypes and shapes), a histogram of its ops,
// its parameters (Const tensors: count and bytes) and every validation
// error, one per line; with --optimized, all of that for the graph after
// the optimisation passes (optimizer/pipeline.h), and what each pass did,
// with its time. A prepared model (`sluice convert --optimized`): its key,
// source and passes, and whether a session of the flags' config here would
// use it (exit 1 when it would refuse it, with why).
// Exit 0 for a valid model, 1 for an invalid or unreadable one, 2 for a
// usage error.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_format.h"
#include "core/dtype.h"
#include "core/shape.h"
#include "core/byte_size.h"
#include "executor/runtime_config.h"
#include "executor/session_model.h"
#include "graph/builder.h"
#include "graph/loader.h"
#include "kernels/providers.h"
#include "nlohmann/json.hpp"
#include "model/model_loader.h"
#include "model/prepared_model.h"
#include "optimizer/pipeline.h"
#include "tools/cli_util.h"
#include "tools/commands.h"

namespace sluice {
namespace {

using nlohmann::json;

// Text output lists at most this many errors (JSON lists all).
constexpr size_t kMaxErrorsShown = 100;
// --optimized text lists at most this many changes per pass (JSON all).
constexpr size_t kMaxChangesShown = 50;

struct TensorSummary {
  std::string name;
  DataType dtype = DT_INVALID;
  Shape shape = Shape::UnknownRank();
  std::string tensor;  // outputs: "node:port"
  // Names of symbolic dimensions (ONNX dim_param), one per dim or none.
  std::vector<std::string> dim_names;
};

// "[batch,seq,768]": unknown dims by their symbolic name where they have one.
std::string ShapeText(const TensorSummary& t) {
  if (t.shape.unknown_rank() || t.dim_names.size() !=
                                    static_cast<size_t>(t.shape.rank())) {
    return t.shape.DebugString();
  }
  std::vector<std::string> dims;
  for (int i = 0; i < t.shape.rank(); ++i) {
    if (t.shape.dim(i) >= 0) {
      dims.push_back(absl::StrCat(t.shape.dim(i)));
    } else {
      dims.push_back(t.dim_names[i].empty() ? "?" : t.dim_names[i]);
    }
  }
  return absl::StrCat("[", absl::StrJoin(dims, ","), "]");
}

struct ModelSummary {
  std::string path;
  int format_version = 0;
  int num_nodes = 0;
  std::map<std::string, int> ops;  // op -> count
  std::vector<TensorSummary> inputs;
  std::vector<TensorSummary> outputs;
  int64_t param_tensors = 0;
  int64_t param_count = 0;
  int64_t param_bytes = 0;
  std::vector<std::string> errors;
  // --optimized: what the passes did.
  std::optional<OptimizedGraph> optimization;
};

// Elements of a Const's value, from its declared shape; -1 when the shape is
// not a valid, fully defined one (the validator reports that).
int64_t ConstElements(const NodeDef& node, DataType* dtype) {
  auto it = node.attr().find("value");
  if (it == node.attr().end() || !it->second.has_tensor()) return -1;
  const TensorProto& t = it->second.tensor();
  *dtype = t.dtype();
  absl::StatusOr<Shape> shape = ShapeFromProto(t.shape(), true);
  if (!shape.ok()) return -1;
  absl::StatusOr<int64_t> n = shape->NumElements();
  return n.ok() ? *n : -1;
}

// What the GraphDef says, valid or not.
void SummarizeDef(const GraphDef& def, ModelSummary* s) {
  s->format_version = def.format_version();
  s->num_nodes = def.node_size();
  for (const NodeDef& node : def.node()) {
    ++s->ops[node.op()];
    if (node.op() != "Const") continue;
    DataType dtype = DT_INVALID;
    const int64_t n = ConstElements(node, &dtype);
    if (n < 0) continue;
    ++s->param_tensors;
    s->param_count += n;
    s->param_bytes += n * static_cast<int64_t>(DataTypeSize(dtype));
  }
  for (const TensorInfo& info : def.signature().inputs()) {
    TensorSummary t{info.name(), info.dtype(), Shape::UnknownRank(), "",
                    {info.dim_names().begin(), info.dim_names().end()}};
    if (absl::StatusOr<Shape> shape = ShapeFromProto(info.shape()); shape.ok()) {
      t.shape = *shape;
    }
    s->inputs.push_back(t);
  }
  for (const TensorInfo& info : def.signature().outputs()) {
    TensorSummary t{info.name(), info.dtype(), Shape::UnknownRank(),
                    info.tensor(), {}};
    if (info.has_shape()) {
      if (absl::StatusOr<Shape> shape = ShapeFromProto(info.shape());
          shape.ok()) {
        t.shape = *shape;
      }
    }
    s->outputs.push_back(t);
  }
}

// What inference says about a valid graph's signature.
void SummarizeGraph(const Graph& graph, ModelSummary* s) {
  s->inputs.clear();
  for (const GraphInput& in : graph.inputs()) {
    TensorSummary t{in.name, in.dtype, in.shape, "", {}};
    for (const TensorInfo& info : graph.def().signature().inputs()) {
      if (info.name() == in.name) {
        t.dim_names.assign(info.dim_names().begin(), info.dim_names().end());
      }
    }
    s->inputs.push_back(std::move(t));
  }
  s->outputs.clear();
  for (const GraphOutput& out : graph.outputs()) {
    s->outputs.push_back(
        {out.name, out.dtype, out.shape,
         absl::StrCat(graph.node(out.tensor.node).name(), ":", out.tensor.port),
         {}});
  }
}

std::string DtypeText(DataType dtype) {
  return dtype == DT_INVALID ? "?" : DataTypeName(dtype);
}

void PrintText(const ModelSummary& s, std::ostream& out) {
  out << "model: " << EscapeForTerminal(s.path) << " (format version " << s.format_version
      << ", " << s.num_nodes << " nodes)\n";
  out << "inputs:\n";
  if (s.inputs.empty()) out << "  (none)\n";
  for (const TensorSummary& t : s.inputs) {
    out << "  " << EscapeForTerminal(t.name) << ": " << DtypeText(t.dtype)
        << EscapeForTerminal(ShapeText(t)) << "\n";
  }
  out << "outputs:\n";
  if (s.outputs.empty()) out << "  (none)\n";
  for (const TensorSummary& t : s.outputs) {
    out << "  " << EscapeForTerminal(t.name) << ": " << DtypeText(t.dtype)
        << t.shape.DebugString();
    if (!t.tensor.empty()) out << "  (" << EscapeForTerminal(t.tensor) << ")";
    out << "\n";
  }
  out << "ops:\n";
  for (const auto& [op, count] : s.ops) {
    out << absl::StrFormat("  %-14s %d\n",
                           op.empty() ? "(no op)" : EscapeForTerminal(op, 200),
                           count);
  }
  out << "parameters: " << s.param_count << " in " << s.param_tensors
      << " Const tensors, " << FormatBytes(s.param_bytes) << "\n";
  if (s.optimization.has_value()) {
    out << "optimization:\n";
    for (const std::string& line :
         DescribeOptimization(*s.optimization, kMaxChangesShown)) {
      out << "  " << EscapeForTerminal(line) << "\n";
    }
  }
  if (s.errors.empty()) {
    out << "valid\n";
    return;
  }
  out << "invalid: " << s.errors.size()
      << (s.errors.size() == 1 ? " error" : " errors") << "\n";
  for (size_t i = 0; i < s.errors.size(); ++i) {
    if (i == kMaxErrorsShown) {
      out << "error: ... and "
          << FormatCount(static_cast<int64_t>(s.errors.size() - i))
          << " more (--json lists every one)\n";
      break;
    }
    out << "error: " << EscapeForTerminal(s.errors[i]) << "\n";
  }
}

json TensorsJson(const std::vector<TensorSummary>& tensors) {
  json list = json::array();
  for (const TensorSummary& t : tensors) {
    json j = {{"name", t.name},
              {"dtype", DtypeText(t.dtype)},
              {"shape", ShapeToJson(t.shape)}};
    if (!t.tensor.empty()) j["tensor"] = t.tensor;
    if (!t.dim_names.empty()) j["dim_names"] = t.dim_names;
    list.push_back(j);
  }
  return list;
}

json OptimizationJson(const OptimizedGraph& opt) {
  json passes = json::array();
  for (const PassRecord& r : opt.records) {
    json p = {{"pass", r.pass},
              {"nodes_before", r.nodes_before},
              {"nodes_after", r.nodes_after},
              {"changes", r.changes},
              {"seconds", r.seconds}};
    if (!r.error.empty()) p["error"] = r.error;
    passes.push_back(std::move(p));
  }
  return {{"level", OptimizationLevelName(opt.level)},
          {"nodes_before", opt.nodes_before},
          {"nodes_after", opt.graph->num_nodes()},
          {"passes", passes}};
}

json SummaryJson(const ModelSummary& s) {
  json j = {{"model", s.path},
          {"valid", s.errors.empty()},
          {"format_version", s.format_version},
          {"num_nodes", s.num_nodes},
          {"inputs", TensorsJson(s.inputs)},
          {"outputs", TensorsJson(s.outputs)},
          {"ops", s.ops},
          {"parameters",
           {{"count", s.param_count},
            {"bytes", s.param_bytes},
            {"tensors", s.param_tensors}}},
          {"errors", s.errors}};
  if (s.optimization.has_value()) {
    j["optimization"] = OptimizationJson(*s.optimization);
  }
  return j;
}

// Each line of each status, so one error is one line.
void AddErrors(const absl::Status& status, std::vector<std::string>* errors) {
  std::string text(status.message());
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) errors->push_back(text.substr(start, end - start));
    start = end + 1;
  }
}

// A prepared model (`sluice convert --optimized`): its header, and whether a
// session of the flags' config on this machine would use it.
int InspectPrepared(const InspectOptions& options, std::ostream& out,
                    std::ostream& err) {
  const std::string& path = options.model_path;
  absl::StatusOr<PreparedModelHeader> h = ReadPreparedModelHeader(path);
  if (!h.ok()) {
    PrintStatusLines(err, "error", h.status());
    return kExitFailure;
  }
  RuntimeConfig config;
  if (absl::Status s = ApplyConfigFlags(options.config, &config); !s.ok()) {
    PrintStatusLines(err, "error", s);
    return kExitUsage;
  }
  // What a session here would do with it: the key, then every byte.
  absl::StatusOr<PreparedModel> used = ReadPreparedModel(
      path, PreparedModelKey(config, ProvidersForMachine(config)));
  const std::string verdict =
      used.ok() ? "used as it is, passes not run"
                : absl::StrCat("refused: ", used.status().message());
  if (options.json) {
    json key = json::object();
    for (const PreparedKeyPart& p : h->key()) key[p.name()] = p.value();
    json passes = json::array();
    for (const PreparedPass& p : h->passes()) {
      passes.push_back({{"pass", p.pass()},
                        {"nodes_before", p.nodes_before()},
                        {"nodes_after", p.nodes_after()},
                        {"changes", p.changes()},
                        {"seconds", p.seconds()}});
    }
    out << DumpJson({{"model", path},
                     {"prepared",
                      {{"source", h->source_path()},
                       {"key", key},
                       {"weights_bytes", h->weights_bytes()},
                       {"constants", h->consts_size()},
                       {"level", h->optimization_level()},
                       {"nodes_before", h->nodes_before()},
                       {"passes", passes}}},
                     {"valid", used.ok()},
                     {"here", verdict}})
        << "\n";
    return used.ok() ? kExitOk : kExitFailure;
  }
  out << "prepared model: " << EscapeForTerminal(path) << " (from "
      << EscapeForTerminal(h->source_path()) << ", "
      << FormatBytes(h->weights_bytes()) << " of weights in "
      << h->consts_size() << " constants)\n";
  out << "key:\n";
  for (const PreparedKeyPart& p : h->key()) {
    out << "  " << EscapeForTerminal(p.name()) << ": "
        << EscapeForTerminal(p.value()) << "\n";
  }
  double seconds = 0;
  for (const PreparedPass& p : h->passes()) seconds += p.seconds();
  out << absl::StrFormat("passes when prepared: level %s, from %d nodes, "
                         "%.1f ms\n",
                         h->optimization_level(), h->nodes_before(),
                         seconds * 1e3);
  for (const PreparedPass& p : h->passes()) {
    out << absl::StrFormat("  %-22s %d -> %d nodes %9.2f ms  (%d changes)\n",
                           p.pass(), p.nodes_before(), p.nodes_after(),
                           p.seconds() * 1e3, p.changes());
  }
  out << "this machine and config: " << EscapeForTerminal(verdict) << "\n";
  return used.ok() ? kExitOk : kExitFailure;
}

}  // namespace

void AddInspectOptions(CLI::App* app, InspectOptions* options) {
  app->description(
      "Show a model's inputs, outputs, op histogram and parameters, and "
      "every validation error. Exit 0 if valid, 1 if not, 2 on a usage "
      "error.");
  app->add_option("MODEL", options->model_path,
                  "Model file (.pb, .pbtxt or .onnx)")
      ->required()
      ->check(RegularFile());
  app->add_flag("--json", options->json, "Print JSON instead of text");
  app->add_flag("--optimized", options->optimized,
                "Summarise the graph after the optimisation passes and list "
                "what each pass did");
  AddConfigFlags(app, kInspectConfigFlags, &options->config,
                 "With --optimized: ");
}

int RunInspect(const InspectOptions& options, std::ostream& out,
               std::ostream& err) {
  if (IsPreparedModelFile(options.model_path)) {
    return InspectPrepared(options, out, err);
  }
  absl::StatusOr<LoadedGraphDef> loaded = LoadModel(options.model_path);
  if (!loaded.ok()) {
    if (options.json) {
      json j = {{"model", options.model_path}, {"valid", false}};
      std::vector<std::string> errors;
      AddErrors(loaded.status(), &errors);
      j["errors"] = errors;
      out << DumpJson(j) << "\n";
    } else {
      PrintStatusLines(err, "error", loaded.status());
    }
    return kExitFailure;
  }
  ModelSummary summary;
  summary.path = options.model_path;
  SummarizeDef(loaded->def, &summary);
  // One status is one error: a newline in it is part of a name (printed
  // escaped), not a second error.
  for (const absl::Status& e : ValidateGraphDef(loaded->def, loaded->source)) {
    summary.errors.emplace_back(e.message());
  }
  if (summary.errors.empty()) {
    // Describing a graph needs no splat made (a few bytes of file can ask
    // for 1 GiB of zeros); the passes of --optimized fold values, so they
    // get every value, as a session would.
    // For the passes, the values move out of the GraphDef as they are
    // decoded (TakeConstValues): the weights are held once, as a
    // session holds them.
    absl::StatusOr<std::unique_ptr<const Graph>> graph =
        options.optimized
            ? BuildGraphSharingConsts(
                  loaded->def, loaded->source,
                  TakeConstValues(&loaded->def, loaded->source))
            : BuildGraph(loaded->def, loaded->source,
                         ConstValues::kDescribeSplats);
    if (graph.ok() && options.optimized) {
      // The passes a session on this machine with these flags' config
      // would run.
      RuntimeConfig config;
      absl::Status flags = ApplyConfigFlags(options.config, &config);
      absl::StatusOr<OptimizedGraph> opt =
          flags.ok() ? OptimizeGraph(*std::move(graph),
                                     config.optimization_level(),
                                     PassOptionsFromConfig(
                                         config, ProvidersForMachine(config)
                                                     .compute()
                                                     .Target()))
                     : absl::StatusOr<OptimizedGraph>(flags);
      if (opt.ok()) {
        ModelSummary after;
        after.path = summary.path;
        SummarizeDef(opt->graph->def(), &after);
        SummarizeGraph(*opt->graph, &after);
        after.optimization = *std::move(opt);
        summary = std::move(after);
      } else {
        AddErrors(opt.status(), &summary.errors);
      }
    } else if (graph.ok()) {
      SummarizeGraph(**graph, &summary);
    } else {
      AddErrors(graph.status(), &summary.errors);
    }
  }
  if (options.json) {
    out << DumpJson(SummaryJson(summary)) << "\n";
  } else {
    PrintText(summary, out);
  }
  return summary.errors.empty() ? kExitOk : kExitFailure;
}

int InspectMain(const std::vector<std::string>& args, std::ostream& out,
                std::ostream& err) {
  CLI::App app;
  app.name("sluice inspect");
  InspectOptions options;
  AddInspectOptions(&app, &options);
  if (int code = ParseCommandLine(app, args, out, err); code != kParsed) {
    return code;
  }
  return RunInspect(options, out, err);
}

}  // namespace sluice
