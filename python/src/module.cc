// sluice._sluice: the extension module behind the `sluice` Python package
// (python/sluice/). Python-facing names, docstrings and stubs live in the
// package; this module is its private engine.
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nanobind/nanobind.h"
#include "nanobind/stl/string.h"
#include "nanobind/stl/vector.h"
#include "core/process_mutexes.h"
#include "device/discovery.h"
#include "device/dynamic_library.h"
#include "executor/runtime_config.h"
#include "nanobind/stl/optional.h"
#include "nanobind/stl/pair.h"
#include "onnx/importer.h"
#include "python/src/config_bindings.h"
#include "python/src/graph_builder_bindings.h"
#include "python/src/json_value.h"
#include "python/src/model_source.h"
#include "python/src/ndarray_tensor.h"
#include "python/src/py_session.h"
#include "python/src/status_error.h"
#include "sluice/config.h"
#include "sluice/dtype.h"
#include "reports/device_report.h"
#include "reports/placement_report.h"
#include "tools/commands.h"

namespace nb = nanobind;

namespace sluice::python {
namespace {

// The placement report (reports/placement_report.h) of a model on planned
// devices ("" = this machine), with `config_text`'s config.
nb::object Place(const std::string& path, nb::bytes bytes,
                 const std::string& format, const std::string& config_text,
                 const std::string& devices, int64_t batch) {
  ModelSource source;
  source.path = path;
  source.bytes.assign(bytes.c_str(), bytes.size());
  source.format = format;
  RuntimeConfig config =
      ValueOrThrow(ParseRuntimeConfig(config_text, "<sluice.Config>"));
  ThrowIfError(ValidateRuntimeConfig(config));
  PlacementRequest request;
  request.model_name = source.name();
  request.devices = devices;
  request.batch = batch;
  request.explain = true;
  absl::StatusOr<PlacementReport> report;
  {
    nb::gil_scoped_release release;
    OnnxImportOptions onnx_options;
    absl::StatusOr<std::unique_ptr<const Graph>> graph =
        LoadModelSource(source, onnx_options);
    report = graph.ok() ? PlaceForReport(request, config, *std::move(graph))
                        : absl::StatusOr<PlacementReport>(graph.status());
  }
  return JsonToPython(PlacementReportJson(ValueOrThrow(std::move(report))));
}

// The device report; with `config_text`, its config section for that
// config after the environment overrides, as a session would see it.
nb::object Devices(const std::optional<std::string>& config_text) {
  DeviceReport report;
  absl::Status status = absl::OkStatus();
  {
    nb::gil_scoped_release release;
    report = BuildDeviceReport(DiscoverDevices());
    if (config_text.has_value()) {
      absl::StatusOr<RuntimeConfig> config =
          ParseRuntimeConfig(*config_text, "<sluice.Config>");
      std::vector<std::string> overrides;
      status = config.status();
      if (status.ok()) status = ApplyEnvironmentOverrides(&*config, &overrides);
      if (status.ok()) status = ValidateRuntimeConfig(*config);
      if (status.ok()) {
        status = AddConfigToDeviceReport("<sluice.Config>", *config,
                                         std::move(overrides), &report);
      }
    }
  }
  ThrowIfError(status);
  return JsonToPython(DeviceReportJson(report));
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
  // Python's process is not a C++ program with mutexes of its own to check
  // (wheels carry their own Abseil, if any): as for the `sluice` command.
  sluice::UseReleaseMutexes();
  if (!InitNumpy()) throw nb::python_error();
  RegisterStatusErrors(m);
  BindConfig(m);
  BindSession(m);
  BindGraphBuilder(m);
  m.def("devices", &Devices, nb::arg("config_text").none() = nb::none(),
        "The device report (reports/device_report.h) as a dict; with a "
        "config, what a session with it (and the environment) would set up.");
  m.def("place", &Place, nb::arg("path"), nb::arg("data"), nb::arg("format"),
        nb::arg("config_text"), nb::arg("devices"), nb::arg("batch"),
        "The placement report (reports/placement_report.h), explained, as a dict.");
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
