// `sluice convert`: LoadModel (model/model_loader.h), BuildGraph to check the
// result, SaveGraphDef.
#include "tools/convert_command.h"

#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "graph/loader.h"
#include "model/model_loader.h"
#include "tools/cli_util.h"
#include "tools/commands.h"
#include "tools/feeds.h"

namespace sluice {

void AddConvertOptions(CLI::App* app, ConvertOptions* options) {
  app->description(
      "Convert a model (.onnx, .pb or .pbtxt) to a sluice GraphDef (.pb or "
      ".pbtxt, by extension). ONNX shape computations are folded from the "
      "input shapes: fix dynamic dims with --input-shape or --dim.");
  app->add_option("MODEL", options->model_path, "Model file to convert")
      ->required()
      ->check(RegularFile());
  app->add_option("OUT", options->output_path, "Output file (.pb or .pbtxt)")
      ->required();
  app->add_option("--input-shape", options->input_shapes,
                  "NAME=D0,D1,...: an ONNX input's shape (-1 keeps a dim)");
  app->add_option("--dim", options->dim_values,
                  "NAME=N: value of a symbolic ONNX dimension (e.g. batch=1)");
}

int RunConvert(const ConvertOptions& options, std::ostream& out,
               std::ostream& err) {
  const std::string lower = absl::AsciiStrToLower(options.output_path);
  if (!absl::EndsWith(lower, ".pb") && !absl::EndsWith(lower, ".pbtxt")) {
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
