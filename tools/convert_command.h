// `sluice convert MODEL OUT.pb|OUT.pbtxt [--input-shape NAME=D0,D1,...]...
// [--dim NAME=N]...`: imports a model (ONNX or sluice), checks that it
// builds as a sluice graph, and writes it as a binary or text GraphDef.
// `sluice convert --optimized MODEL OUT.sluicemodel [--config CFG]
// [--optimization-level L] [CFLAGS]`: runs the passes a session of that
// config would run on this machine and writes the prepared model
// (model/prepared_model.h), which a session then starts from.
//
//   std::ostringstream out, err;
//   int code = ConvertMain({"model.onnx", "model.pb", "--dim", "batch=1"},
//                          out, err);
//   code = ConvertMain({"model.onnx", "model.sluicemodel", "--optimized"},
//                      out, err);
//
// Same exit codes as the other subcommands (tools/commands.h): 0 written,
// 1 the model could not be imported or is invalid, 2 usage error.
// Thread-compatible: writes the output file.
#ifndef SLUICE_TOOLS_CONVERT_COMMAND_H_
#define SLUICE_TOOLS_CONVERT_COMMAND_H_

#include <ostream>
#include <string>
#include <vector>

#include "tools/config_flags.h"

namespace CLI {
class App;
}  // namespace CLI

namespace sluice {

struct ConvertOptions {
  std::string model_path;
  std::string output_path;
  std::vector<std::string> input_shapes;  // "NAME=D0,D1,..."
  std::vector<std::string> dim_values;    // "DIM_NAME=N"
  // Write a prepared model: the graph after the passes of `config`.
  bool optimized = false;
  ConfigFlagValues config;
};
void AddConvertOptions(CLI::App* app, ConvertOptions* options);
int RunConvert(const ConvertOptions& options, std::ostream& out,
               std::ostream& err);
int ConvertMain(const std::vector<std::string>& args, std::ostream& out,
                std::ostream& err);

}  // namespace sluice

#endif  // SLUICE_TOOLS_CONVERT_COMMAND_H_
