// `sluice convert MODEL OUT.pb|OUT.pbtxt [--input-shape NAME=D0,D1,...]...
// [--dim NAME=N]...`: imports a model (ONNX or sluice), checks that it
// builds as a sluice graph, and writes it as a binary or text GraphDef.
//
//   std::ostringstream out, err;
//   int code = ConvertMain({"model.onnx", "model.pb", "--dim", "batch=1"},
//                          out, err);
//
// Same exit codes as the other subcommands (tools/commands.h): 0 written,
// 1 the model could not be imported or is invalid, 2 usage error.
// Thread-compatible: writes the output file.
#ifndef SLUICE_TOOLS_CONVERT_COMMAND_H_
#define SLUICE_TOOLS_CONVERT_COMMAND_H_

#include <ostream>
#include <string>
#include <vector>

namespace CLI {
class App;
}  // namespace CLI

namespace sluice {

struct ConvertOptions {
  std::string model_path;
  std::string output_path;
  std::vector<std::string> input_shapes;  // "NAME=D0,D1,..."
  std::vector<std::string> dim_values;    // "DIM_NAME=N"
};
void AddConvertOptions(CLI::App* app, ConvertOptions* options);
int RunConvert(const ConvertOptions& options, std::ostream& out,
               std::ostream& err);
int ConvertMain(const std::vector<std::string>& args, std::ostream& out,
                std::ostream& err);

}  // namespace sluice

#endif  // SLUICE_TOOLS_CONVERT_COMMAND_H_
