// The `sluice` command line: one function per subcommand, each taking its
// arguments and the streams to write to and returning the process exit code,
// so that tests can drive a command without a process.
//
//   std::ostringstream out, err;
//   int code = SluiceMain({"inspect", "examples/mlp.pbtxt", "--json"}, out, err);
//   int same = InspectMain({"examples/mlp.pbtxt", "--json"}, out, err);
//
// Exit codes: 0 success, 1 failure (an invalid model, a failed run), 2 usage
// error (unknown flag, missing argument, nonexistent file). No exception
// leaves these functions: CLI11's are caught where arguments are parsed.
// Thread-compatible: commands read the process environment and may write
// files, but share no state.
#ifndef SLUICE_TOOLS_COMMANDS_H_
#define SLUICE_TOOLS_COMMANDS_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sluice/session.h"
#include "tools/config_flags.h"

namespace CLI {
class App;
}  // namespace CLI

namespace sluice {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// The whole CLI; `args` excludes the program name.
int SluiceMain(const std::vector<std::string>& args, std::ostream& out,
               std::ostream& err);

// sluice devices [--json] [--config CFG]
struct DevicesOptions {
  bool json = false;
  std::string config_path;
};
void AddDevicesOptions(CLI::App* app, DevicesOptions* options);
int RunDevices(const DevicesOptions& options, std::ostream& out,
               std::ostream& err);
int DevicesMain(const std::vector<std::string>& args, std::ostream& out,
                std::ostream& err);

// sluice inspect MODEL [--json] [--optimized [--optimization-level L]
//                [--precision P] [--conv-layout C]]
struct InspectOptions {
  std::string model_path;
  bool json = false;
  // Summarise the graph after the optimisation passes, and list what each
  // pass did: the passes a session with the config flags' fields
  // (kInspectConfigFlags) would run.
  bool optimized = false;
  ConfigFlagValues config;
};
inline constexpr ConfigFlagSet kInspectConfigFlags =
    kOptimizationLevelFlag | kPrecisionFlag | kConvLayoutFlag |
    kCpuConvolutionsFlag;
void AddInspectOptions(CLI::App* app, InspectOptions* options);
int RunInspect(const InspectOptions& options, std::ostream& out,
               std::ostream& err);
int InspectMain(const std::vector<std::string>& args, std::ostream& out,
                std::ostream& err);

// sluice run MODEL [--input NAME=FILE.npy]... [--random-inputs [--seed N]]
//                  [--output-dir DIR] [--config CFG] [--json]
inline constexpr char kDefaultOutputDir[] = "sluice_out";
struct RunOptions {
  std::string model_path;
  std::vector<std::string> inputs;  // "NAME=FILE.npy"
  // "NAME=R": input NAME is read and enters the graph on rank R of a job
  // (StepOptions::feeds_on_ranks); the others do not read it.
  std::vector<std::string> input_ranks;
  bool random_inputs = false;
  uint64_t seed = 0;
  std::string output_dir = kDefaultOutputDir;
  // --config, --device ("gpu:0": every node there it has a kernel for),
  // --precision, --conv-layout (kRunConfigFlags).
  ConfigFlagValues config;
  // "NAME=N": values of symbolic ONNX dimensions, fixed at import.
  std::vector<std::string> dims;
  bool stats = false;  // print each device's memory statistics after the run
  std::string trace_path;  // write the step as a Chrome trace (tools/trace.h)
  // --timeout: the step's deadline in seconds (StepOptions::deadline); 0:
  // none. A step past it stops with DEADLINE_EXCEEDED naming the node.
  double timeout = 0;
  bool json = false;
};
inline constexpr ConfigFlagSet kRunConfigFlags =
    kConfigFileFlag | kDeviceFlag | kPrecisionFlag | kConvLayoutFlag |
    kCpuConvolutionsFlag;
void AddRunOptions(CLI::App* app, RunOptions* options);
int RunRun(const RunOptions& options, std::ostream& out, std::ostream& err);
int RunMain(const std::vector<std::string>& args, std::ostream& out,
            std::ostream& err);

struct BenchOptions {
  std::string model_path;
  std::vector<std::string> inputs;  // "NAME=FILE.npy"
  bool random_inputs = false;
  uint64_t seed = 0;
  int warmup = 3;
  int runs = 0;          // 0: as many as `seconds` allows
  double seconds = 2.0;
  double timeout = 0;    // --timeout: each step's deadline in seconds; 0: none
  ConfigFlagValues config;  // kBenchConfigFlags
  // "NAME=N": values of symbolic ONNX dimensions, fixed at import.
  std::vector<std::string> dims;
  int top = 10;
  std::string trace_path;
  // "--io-device gpu:0": feeds are copied to that device once, before any
  // step, and fetches stay there, so no step copies to or from the host
  // (a caller that keeps its data on the GPU; sluice/session.h). Empty:
  // feeds from the host, fetches to it.
  std::string io_device;
  // "--pinned": feeds from page-locked host buffers made once, before any
  // step (Session::AllocateHostTensor), and fetches into page-locked memory
  // (StepOptions::pinned_host_fetches): the host path of a caller that
  // pins its buffers, as torch's pin_memory() does. Excludes io_device.
  bool pinned = false;
  bool json = false;
  bool progress = true;  // a progress bar on a terminal (never with json)
};
inline constexpr ConfigFlagSet kBenchConfigFlags = kRunConfigFlags;
void AddBenchOptions(CLI::App* app, BenchOptions* options);
int RunBench(const BenchOptions& options, std::ostream& out, std::ostream& err);
int BenchMain(const std::vector<std::string>& args, std::ostream& out,
              std::ostream& err);

}  // namespace sluice

#endif  // SLUICE_TOOLS_COMMANDS_H_
