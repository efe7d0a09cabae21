// sluice._sluice: the extension module behind the `sluice` Python package
// (python/sluice/). Python-facing names, docstrings and stubs live in the
// package; this module is its private engine.
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nanobind/nanobind.h"
#include "nanobind/stl/string.h"
#include "nanobind/stl/vector.h"
#include "device/dynamic_library.h"
#include "executor/runtime_config.h"
#include "nanobind/stl/pair.h"
#include "onnx/importer.h"
#include "python/src/graph_builder_bindings.h"
#include "python/src/model_source.h"
#include "python/src/ndarray_tensor.h"
#include "python/src/py_session.h"
#include "python/src/status_error.h"
#include "sluice/config.h"
#include "sluice/dtype.h"
#include "tools/commands.h"
#include "tools/place_command.h"

namespace nb = nanobind;

namespace sluice::python {
namespace {

// `sluice place --json` for a model on planned devices ("" = this machine).
std::string PlaceJson(const std::string& path, nb::bytes bytes,
                      const std::string& format, const std::string& config_text,
                      const std::string& devices, const std::string& strategy,
                      int64_t batch, const std::string& optimization_level) {
  ModelSource source;
  source.path = path;
  source.bytes.assign(bytes.c_str(), bytes.size());
  source.format = format;
  RuntimeConfig config =
      ValueOrThrow(ParseRuntimeConfig(config_text, "<sluice.Config>"));
  ThrowIfError(ValidateRuntimeConfig(config));
  PlaceOptions options;
  options.model_path = source.name();
  options.devices = devices;
  if (!strategy.empty()) options.config.fields["placement_strategy"] = strategy;
  options.batch = batch;
  options.explain = true;
  if (!optimization_level.empty()) {
    options.config.fields["optimization_level"] = optimization_level;
  }
  absl::StatusOr<std::string> json;
  {
    nb::gil_scoped_release release;
    OnnxImportOptions onnx_options;
    absl::StatusOr<std::unique_ptr<const Graph>> graph =
        LoadModelSource(source, onnx_options);
    json = graph.ok() ? PlaceGraphJson(options, config, *std::move(graph))
                      : absl::StatusOr<std::string>(graph.status());
  }
  return ValueOrThrow(std::move(json));
}

int CliMain(const std::vector<std::string>& args) {
  nb::gil_scoped_release release;
  const int code = SluiceMain(args, std::cout, std::cerr);
  std::cout.flush();
  std::cerr.flush();
  return code;
}

std::vector<std::string> DtypeNames() {
  std::vector<std::string> names;
  for (DataType d : AllDataTypes()) names.push_back(DataTypeName(d));
  return names;
}

// ("bytes", n) or ("fraction", f) for "4GiB", "512M", "0.5", as
// SLUICE_GPU_MEMORY_LIMIT takes them.
std::pair<std::string, double> ParseLimit(const std::string& text) {
  MemoryLimit limit = ValueOrThrow(ParseMemoryLimit(text));
  if (limit.has_fraction()) return {"fraction", limit.fraction()};
  return {"bytes", static_cast<double>(limit.bytes())};
}

bool HasCuda() {
#ifdef SLUICE_WITH_CUDA
  return true;
#else
  return false;
#endif
}

}  // namespace
}  // namespace sluice::python

NB_MODULE(_sluice, m) {
  using namespace sluice::python;
  m.doc() = "sluice's engine; use the sluice package.";
  if (!InitNumpy()) throw nb::python_error();
  RegisterStatusErrors(m);
  BindSession(m);
  BindGraphBuilder(m);
  m.def("devices_json", [] {
    nb::gil_scoped_release release;
    return sluice::DevicesJson();
  }, "What `sluice devices --json` prints.");
  m.def("place_json", &PlaceJson, nb::arg("path"), nb::arg("data"),
        nb::arg("format"), nb::arg("config_text"), nb::arg("devices"),
        nb::arg("strategy"), nb::arg("batch"), nb::arg("optimization_level"),
        "What `sluice place --json --explain` prints.");
  m.def("cli_main", &CliMain, nb::arg("args"),
        "Runs the `sluice` command line with `args`; returns the exit code.");
  m.def("parse_memory_limit", &ParseLimit, nb::arg("text"),
        "(\"bytes\", n) or (\"fraction\", f) for \"4GiB\", \"512M\", \"0.5\".");
  m.def("dtype_names", &DtypeNames, "Every sluice dtype name, in enum order.");
  m.def("set_package_roots", &sluice::DynamicLibrary::SetPackageRoots,
        nb::arg("roots"),
        "Folders whose nvidia/*/lib the CUDA libraries are loaded from first "
        "(sluice/_libraries.py passes sys.path's).");
  m.def("package_library_dirs", &sluice::DynamicLibrary::PackageLibraryDirs,
        "The nvidia/*/lib folders searched before the system's.");
  m.attr("with_cuda") = HasCuda();
  m.attr("with_onnx") = sluice::OnnxImportAvailable();
}
