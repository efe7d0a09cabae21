// `sluice convert`: LoadModel (model/model_loader.h), BuildGraph to check the
// result, SaveGraphDef; with --optimized, LoadModelGraph, OptimizeGraph and
// WritePreparedModel.
#include "tools/convert_command.h"

#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "core/byte_size.h"
#include "executor/runtime_config.h"
#include "executor/session_model.h"
#include "graph/loader.h"
#include "kernels/providers.h"
#include "model/model_loader.h"
#include "model/prepared_model.h"
#include "optimizer/pipeline.h"
#include "tools/cli_util.h"
#include "tools/commands.h"
#include "tools/feeds.h"

namespace sluice {

void AddConvertOptions(CLI::App* app, ConvertOptions* options) {
  app->description(
      "Convert a model (.onnx, .pb or .pbtxt) to a sluice GraphDef (.pb or "
      ".pbtxt, by extension). ONNX shape computations are folded from the "
      "input shapes: fix dynamic dims with --input-shape or --dim. "
      "--optimized writes a prepared model (OUT.sluicemodel): the graph after "
      "the passes a session with these config flags would run on this "
      "machine, weights in the layout its device wants, which `sluice run`, "
      "`bench` and Session::CreateFromFile start from without running the "
      "passes. It is keyed by the model's fingerprint, the config fields "
      "that change the passes (level, precision, conv layout, resource "
      "limits), the target provider, the versions of the libraries the "
      "providers load (oneDNN, cuDNN) and sluice's build ID; a session whose "
      "key differs, or a file truncated, corrupt or of an older format, is "
      "refused with the reason and the session loads the source model "
      "instead (when it is unchanged).");
  app->add_option("MODEL", options->model_path, "Model file to convert")
      ->required()
      ->check(RegularFile());
  app->add_option("OUT", options->output_path,
                  "Output file (.pb or .pbtxt; .sluicemodel with --optimized)")
      ->required();
  app->add_option("--input-shape", options->input_shapes,
                  "NAME=D0,D1,...: an ONNX input's shape (-1 keeps a dim)");
  app->add_option("--dim", options->dim_values,
                  "NAME=N: value of a symbolic ONNX dimension (e.g. batch=1)");
  app->add_flag("--optimized", options->optimized,
                "Write a prepared model: the graph after the passes, weights "
                "in the device's layout (OUT.sluicemodel)");
  AddConfigFlags(app, kConfigFileFlag | kDeviceFlag | kInspectConfigFlags,
                 &options->config, "With --optimized: ");
}

namespace {

// --optimized: the passes a session of the flags' config would run here.
int RunConvertOptimized(const ConvertOptions& options,
                        OnnxImportOptions onnx_options, std::ostream& out,
                        std::ostream& err) {
  std::vector<std::string> notes;
  absl::StatusOr<RuntimeConfig> config =
      LoadConfigWithFlags(options.config, &notes);
  if (!config.ok()) {
    PrintStatusLines(err, "error", config.status());
    return kExitUsage;
  }
  for (const std::string& note : notes) err << "note: " << note << "\n";
  if (IsPreparedModelFile(options.model_path)) {
    err << "error: " << options.model_path
        << " is a prepared model already; convert its source model\n";
    return kExitUsage;
  }
  onnx_options.embed_external_data = false;  // the weights are copied out
  onnx_options.limits = EffectiveResourceLimits(*config);
  absl::StatusOr<std::unique_ptr<const Graph>> graph =
      LoadModelGraph(options.model_path, onnx_options);
  if (!graph.ok()) {
    PrintStatusLines(err, "error", graph.status());
    return kExitFailure;
  }
  const ProviderSet providers = ProvidersForMachine(*config);
  absl::StatusOr<PreparedModelHeader> header =
      PreparedSourceHeader(options.model_path, onnx_options, **graph,
                           PreparedModelKey(*config, providers));
  if (!header.ok()) {
    PrintStatusLines(err, "error", header.status());
    return kExitFailure;
  }
  absl::StatusOr<OptimizedGraph> opt = OptimizeGraph(
      *std::move(graph), config->optimization_level(),
      PassOptionsFromConfig(*config, providers.compute().Target()));
  if (!opt.ok()) {
    PrintStatusLines(err, "error", opt.status());
    return kExitFailure;
  }
  RecordOptimization(*opt, &*header);
  if (absl::Status s =
          WritePreparedModel(*opt->graph, *header, options.output_path);
      !s.ok()) {
    PrintStatusLines(err, "error", s);
    return kExitFailure;
  }
  int64_t weights = 0;
  for (const Node& n : opt->graph->nodes()) {
    if (n.const_value() != nullptr) {
      weights += static_cast<int64_t>(n.const_value()->bytes());
    }
  }
  out << "wrote " << options.output_path << ": prepared model, "
      << opt->graph->num_nodes() << " nodes, " << FormatBytes(weights)
      << " of weights\n";
  out << "key:\n";
  for (const PreparedKeyPart& p : header->key()) {
    out << "  " << p.name() << ": " << p.value() << "\n";
  }
  // Each pass's nodes and time, a few of its changes (`sluice inspect
  // --optimized` lists them all).
  for (const std::string& line : DescribeOptimization(*opt, 3)) {
    out << line << "\n";
  }
  return kExitOk;
}

}  // namespace

int RunConvert(const ConvertOptions& options, std::ostream& out,
               std::ostream& err) {
  const std::string lower = absl::AsciiStrToLower(options.output_path);
  if (options.optimized && !absl::EndsWith(lower, kPreparedModelExtension)) {
    err << "error: with --optimized, OUT must end in "
        << kPreparedModelExtension << ": " << options.output_path << "\n";
    return kExitUsage;
  }
  if (!options.optimized && (!options.config.fields.empty() ||
                            !options.config.config_path.empty())) {
    err << "error: the config flags apply with --optimized only\n";
    return kExitUsage;
  }
  if (!options.optimized && !absl::EndsWith(lower, ".pb") &&
      !absl::EndsWith(lower, ".pbtxt")) {
    err << "error: OUT must end in .pb or .pbtxt: " << options.output_path
        << "\n";
    return kExitUsage;
  }
  if (absl::Status c = CheckOutputFile(options.output_path, "OUT"); !c.ok()) {
    PrintStatusLines(err, "error", c);
    return kExitUsage;
  }
  OnnxImportOptions onnx_options;
  // OUT may be in another folder than the model: keep every weight in it.
  onnx_options.embed_external_data = true;
  for (const std::string& flag : options.input_shapes) {
    if (absl::Status s = ParseInputShapeFlag(flag, &onnx_options); !s.ok()) {
      PrintStatusLines(err, "error: --input-shape", s);
      return kExitUsage;
    }
  }
  for (const std::string& flag : options.dim_values) {
    if (absl::Status s = CheckDimFlag(flag); !s.ok()) {
      PrintStatusLines(err, "error", s);
      return kExitUsage;
    }
    if (absl::Status s = ParseDimValueFlag(flag, &onnx_options); !s.ok()) {
      PrintStatusLines(err, "error: --dim", s);
      return kExitUsage;
    }
  }
  if (options.optimized) {
    return RunConvertOptimized(options, onnx_options, out, err);
  }
  absl::StatusOr<LoadedGraphDef> loaded =
      LoadModel(options.model_path, onnx_options);
  if (!loaded.ok()) {
    PrintStatusLines(err, "error", loaded.status());
    return kExitFailure;
  }
  // Validated and described, not run: splats are checked, not made.
  absl::StatusOr<std::unique_ptr<const Graph>> graph = BuildGraph(
      loaded->def, loaded->source, ConstValues::kDescribeSplats);
  if (!graph.ok()) {
    PrintStatusLines(err, "error", graph.status());
    return kExitFailure;
  }
  if (absl::Status s = SaveGraphDef(loaded->def, options.output_path);
      !s.ok()) {
    PrintStatusLines(err, "error", s);
    return kExitFailure;
  }
  std::map<std::string, int> ops;
  for (const NodeDef& node : loaded->def.node()) ++ops[node.op()];
  std::vector<std::string> parts;
  for (const auto& [op, count] : ops) {
    parts.push_back(absl::StrCat(op, " x", count));
  }
  out << "wrote " << options.output_path << ": " << loaded->def.node_size()
      << " nodes (" << absl::StrJoin(parts, ", ") << ")\n";
  for (const GraphInput& in : (*graph)->inputs()) {
    out << "  input  " << in.name << ": " << DataTypeName(in.dtype)
        << in.shape.DebugString() << "\n";
  }
  for (const GraphOutput& o : (*graph)->outputs()) {
    out << "  output " << o.name << ": " << DataTypeName(o.dtype)
        << o.shape.DebugString() << "\n";
  }
  return kExitOk;
}

int ConvertMain(const std::vector<std::string>& args, std::ostream& out,
                std::ostream& err) {
  CLI::App app;
  app.name("sluice convert");
  ConvertOptions options;
  AddConvertOptions(&app, &options);
  if (int code = ParseCommandLine(app, args, out, err); code != kParsed) {
    return code;
  }
  return RunConvert(options, out, err);
}

}  // namespace sluice
