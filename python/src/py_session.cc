#include "python/src/py_session.h"

#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <sstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "device/device.h"
#include "device/gpu_device.h"
#include "executor/config_fields.h"
#include "executor/runtime_config.h"
#include "executor/session.h"
#include "graph/graph.h"
#include "nanobind/ndarray.h"
#include "nanobind/stl/pair.h"
#include "nanobind/stl/string.h"
#include "nanobind/stl/tuple.h"
#include "nanobind/stl/vector.h"
#include "python/src/json_value.h"
#include "model/prepared_model.h"
#include "python/src/model_source.h"
#include "python/src/ndarray_tensor.h"
#include "python/src/sigint_cancels.h"
#include "python/src/status_error.h"
#include "sluice/config.h"
#include "reports/bench_report.h"
#include "reports/placement_report.h"
#include "tools/cli_util.h"
#include "tools/feeds.h"
#include "tools/trace.h"

namespace nb = nanobind;

namespace sluice::python {
namespace {

using Clock = std::chrono::steady_clock;

// A run() timeout of this many seconds or more sets no deadline (about 100
// years; steady_clock's nanoseconds run out after 292).
constexpr double kNoDeadlineSeconds = 100.0 * 365 * 24 * 3600;

// Set by sluice/session.py at import: normalize(value, dtype_name or None,
// feed_name) -> (contiguous host ndarray, dtype name or None), raising
// InvalidArgumentError naming the feed, for what nanobind cannot
// borrow as it is (lists, strided views, ml_dtypes arrays); and
// view(array, dtype_name) for results of dtypes NumPy lacks. Leaked on
// purpose (no release after the interpreter has gone).
nb::object* normalize_feed = nullptr;
nb::object* view_result = nullptr;

// A config from its text (sluice/config.py writes it), validated.
RuntimeConfig ConfigFromText(const std::string& text) {
  RuntimeConfig config =
      ValueOrThrow(ParseRuntimeConfig(text, "<sluice.Config>"));
  ThrowIfError(ValidateRuntimeConfig(config));
  return config;
}

OnnxImportOptions OnnxOptions(const RuntimeConfig& config,
                              const std::vector<std::string>& dims) {
  OnnxImportOptions options;
  options.limits = EffectiveResourceLimits(config);
  for (const std::string& d : dims) {
    ThrowIfError(CheckDimFlag(d));
    ThrowIfError(ParseDimValueFlag(d, &options));
  }
  return options;
}

std::vector<std::string> DeviceNames(const Session& session) {
  std::vector<std::string> names;
  for (Device* d : session.devices()) names.push_back(d->name());
  return names;
}

// The session's GPU on CUDA device `ordinal` (the first, when the config
// splits it into logical GPUs); null when the session does not use it.
GpuDevice* SessionGpu(const Session& session, int ordinal) {
  for (Device* d : session.devices()) {
    if (d->type() != DeviceType::kGpu) continue;
    auto* gpu = static_cast<GpuDevice*>(d);
    if (gpu->physical_index() == ordinal) return gpu;
  }
  return nullptr;
}

// A DLPack capsule of `value`, an object in CUDA memory on `gpu`, made
// ready for the session's compute stream
// on it: the producer makes that stream wait for its own work (the DLPack
// `stream` argument). A producer that takes no `stream` is asked without
// one, and its pending work must then be finished by the caller.
nb::object CudaCapsule(nb::handle value, GpuDevice* gpu) {
  const auto stream = reinterpret_cast<uintptr_t>(gpu->compute_stream());
  try {
    return value.attr("__dlpack__")(nb::arg("stream") = stream);
  } catch (nb::python_error& e) {
    if (!e.matches(PyExc_TypeError)) throw;
  }
  return value.attr("__dlpack__")();
}

// How messages name a feed: "feed 'x'", or "the value" for copy_to's.
std::string FeedLabel(const std::string& name) {
  return name.empty() ? "the value" : absl::StrCat("feed '", name, "'");
}

// `t`, or its error with the feed's label before the message.
absl::StatusOr<Tensor> Named(const std::string& name, absl::StatusOr<Tensor> t) {
  if (t.ok()) return t;
  return absl::Status(t.status().code(), absl::StrCat(FeedLabel(name), ": ",
                                                      t.status().message()));
}

// `h` as an int when it is a Python int or of a subclass of int other than
// bool (torch returns its DLDeviceType, an IntEnum); never converted from
// a float or a str.
bool IntOf(nb::handle h, int* out) {
  if (!PyLong_Check(h.ptr()) || PyBool_Check(h.ptr())) return false;
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
  if (overflow != 0 || (v == -1 && PyErr_Occurred()) ||
      v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max()) {
    PyErr_Clear();
    return false;
  }
  *out = static_cast<int>(v);
  return true;
}

// A DLPack producer's (device_type, device_id), from its
// __dlpack_device__(); INVALID_ARGUMENT naming feed `name` when that is not
// a tuple of two ints (the producer's own exception goes through as it is).
std::pair<int, int> DlpackDeviceOf(nb::handle value, const std::string& name) {
  nb::object device = value.attr("__dlpack_device__")();
  nb::tuple pair;
  int type = 0;
  int id = 0;
  if (!nb::try_cast(device, pair) || pair.size() != 2 || !IntOf(pair[0], &type) ||
      !IntOf(pair[1], &id)) {
    throw StatusError(absl::InvalidArgumentError(absl::StrCat(
        FeedLabel(name), ": its __dlpack_device__() returned ",
        nb::cast<std::string>(nb::repr(device)),
        ", not a tuple (device_type, device_id) of two ints")));
  }
  return {type, id};
}

// One feed value as a Tensor, borrowed where it can be: host memory as it
// is, CUDA memory as external GPU memory on the session's GPU. `name`
// (the feed's; "" for a value that is not a feed) is for messages;
// `expected` is the graph input's dtype name, empty for a feed that is not
// a graph input.
Tensor FeedTensor(const std::string& name, nb::handle value,
                  const std::string& expected, const Session& session) {
  nb::ndarray<nb::ro> array;
  DataType dtype = DT_INVALID;
  std::string gpu_name;
  // NumPy arrays (__array_interface__) are host memory: no DLPack query.
  if (!nb::hasattr(value, "__array_interface__") &&
      nb::hasattr(value, "__dlpack_device__") &&
      nb::hasattr(value, "__dlpack__")) {
    const auto [type, id] = DlpackDeviceOf(value, name);
    ThrowIfError(CheckDlpackDevice(type, id));
    if (type == 2) {  // kDLCUDA
      GpuDevice* gpu = SessionGpu(session, id);
      if (gpu == nullptr) {
        // Said before the producer is asked for anything.
        throw StatusError(absl::InvalidArgumentError(absl::StrCat(
            "a feed on CUDA device ", id, ", which this session does not "
            "use (it uses ", absl::StrJoin(DeviceNames(session), ", "),
            "); copy it to the CPU or to a GPU the session runs on")));
      }
      gpu_name = gpu->name();
      nb::object capsule = CudaCapsule(value, gpu);
      if (!nb::try_cast(capsule, array, /*convert=*/false)) {
        throw StatusError(absl::InvalidArgumentError(
            "a CUDA feed's DLPack capsule could not be read"));
      }
      return ValueOrThrow(Named(name, BorrowNdarray(array, dtype, gpu_name)));
    }
  }
  if (!nb::try_cast(value, array, /*convert=*/false) || !CanBorrow(array)) {
    if (normalize_feed == nullptr) {
      throw StatusError(absl::InternalError("sluice.session not imported"));
    }
    nb::tuple t = nb::cast<nb::tuple>((*normalize_feed)(
        value, expected.empty() ? nb::none() : nb::cast(expected), name));
    array = nb::cast<nb::ndarray<nb::ro>>(t[0]);
    if (!t[1].is_none()) {
      dtype = ValueOrThrow(ParseDataType(nb::cast<std::string>(t[1])));
    }
  }
  if (array.is_valid() && array.device_type() == 2) {
    // A capsule handed in directly, or a CUDA object found by nanobind.
    GpuDevice* gpu = SessionGpu(session, array.device_id());
    if (gpu != nullptr) gpu_name = gpu->name();
  }
  return ValueOrThrow(Named(name, BorrowNdarray(array, dtype, gpu_name)));
}

class PySession {
 public:
  PySession(ModelSource source, const std::string& config_text,
            const std::string& device, const std::vector<std::string>& dims)
      : source_(std::move(source)) {
    RuntimeConfig config = ConfigFromText(config_text);
    if (!device.empty()) {
      config.set_default_device(device);
      config.set_placement_strategy(PLACEMENT_MANUAL);
    }
    onnx_options_ = OnnxOptions(config, dims);
    const Clock::time_point t0 = Clock::now();
    {
      nb::gil_scoped_release release;
      // A prepared model (`sluice convert --optimized`) goes through
      // CreateFromFile, which checks its key against this config.
      const bool prepared =
          !source_.path.empty() && IsPreparedModelFile(source_.path);
      absl::StatusOr<std::unique_ptr<const Graph>> graph =
          prepared ? absl::StatusOr<std::unique_ptr<const Graph>>(nullptr)
                   : LoadModelSource(source_, onnx_options_);
      if (prepared) {
        absl::StatusOr<std::unique_ptr<Session>> s =
            Session::CreateFromFile(source_.path, config);
        if (s.ok()) {
          session_ = *std::move(s);
        } else {
          status_ = s.status();
        }
      } else if (graph.ok()) {
        absl::StatusOr<std::unique_ptr<Session>> s =
            Session::Create(*std::move(graph), config);
        if (s.ok()) {
          session_ = *std::move(s);
        } else {
          status_ = s.status();
        }
      } else {
        status_ = graph.status();
      }
    }
    ThrowIfError(status_);
    create_seconds_ = std::chrono::duration<double>(Clock::now() - t0).count();
    for (const GraphInput& in : session_->graph().inputs()) {
      input_dtypes_.emplace_back(in.name, DataTypeName(in.dtype));
    }
  }

  // (name, dtype, dims, dim_names) per input or output; dims -1 unknown,
  // dims empty with rank -1 for an unknown rank.
  using SpecTuple = std::tuple<std::string, std::string, std::vector<int64_t>,
                               std::vector<std::string>, int>;
  std::vector<SpecTuple> Inputs() const {
    std::vector<SpecTuple> out;
    const Graph& g = session_->graph();
    for (const GraphInput& in : g.inputs()) {
      std::vector<std::string> names;
      for (const TensorInfo& info : g.def().signature().inputs()) {
        if (info.name() == in.name) {
          names.assign(info.dim_names().begin(), info.dim_names().end());
        }
      }
      out.push_back(Spec(in.name, in.dtype, in.shape, std::move(names)));
    }
    return out;
  }
  std::vector<SpecTuple> Outputs() const {
    std::vector<SpecTuple> out;
    const Graph& g = session_->graph();
    for (const GraphOutput& o : g.outputs()) {
      std::vector<std::string> names;
      for (const TensorInfo& info : g.def().signature().outputs()) {
        if (info.name() == o.name) {
          names.assign(info.dim_names().begin(), info.dim_names().end());
        }
      }
      out.push_back(Spec(o.name, o.dtype, o.shape, std::move(names)));
    }
    return out;
  }

  // The feeds `names[i]` = `values[i]`, each converted (FeedTensor) to the
  // dtype the session expects for it; as many values as names.
  Feeds ToFeeds(const std::vector<std::string>& names,
                nb::sequence values) const {
    const size_t n = names.size();
    if (nb::len(values) != n) {
      throw StatusError(absl::InvalidArgumentError(absl::StrCat(
          n, " feed names but ", nb::len(values), " values")));
    }
    Feeds feeds;
    feeds.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      feeds.emplace_back(names[i], FeedTensor(names[i], values[i],
                                              ExpectedDtype(names[i]), *session_));
    }
    return feeds;
  }

  // Fetches (empty: every output) from feeds given as names and values.
  // `output_device`: "" or a CPU for NumPy results, a GPU ("gpu:0") for
  // DLPack objects over the results in that GPU's memory.
  nb::list Run(const std::vector<std::string>& fetches,
               const std::vector<std::string>& names, nb::sequence values,
               const std::string& output_device, double timeout,
               bool interruptible) {
    Feeds feeds = ToFeeds(names, values);
    StepOptions options;
    GpuDevice* out_gpu = OutputGpu(output_device);
    if (out_gpu != nullptr) options.fetch_devices = {out_gpu->name()};
    // Seconds; the step stops at a node boundary past them. More than a
    // century (inf included) is no limit: the deadline would overflow the
    // clock's 64-bit nanoseconds.
    if (timeout > 0 && timeout < kNoDeadlineSeconds) {
      options.deadline = std::chrono::steady_clock::now() +
                         std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                             std::chrono::duration<double>(timeout));
    }
    absl::StatusOr<std::vector<Tensor>> result;
    // On Python's main thread, Ctrl-C stops the step at its next node
    // (python/src/sigint_cancels.h), then raises KeyboardInterrupt.
    StepCancellation cancel;
    if (interruptible) options.cancellation = &cancel;
    {
      std::optional<SigintCancels> sigint;
      if (interruptible) sigint.emplace(&cancel);
      nb::gil_scoped_release release;
      result = session_->Run(feeds, fetches, options);
    }
    if (cancel.cancelled() && PyErr_CheckSignals() != 0) throw nb::python_error();
    ThrowIfError(result.status());
    nb::list out;
    if (out_gpu != nullptr) {
      // Each result keeps this session alive: its memory goes back to the
      // session's GPU arena.
      nb::object self = nb::find(this);
      for (const Tensor& t : *result) {
        CheckDlpackExportable(t.dtype());  // refused now, not on first use
        out.append(nb::cast(DeviceArray{self, t, out_gpu->physical_index()}));
      }
      return out;
    }
    std::string view;
    for (Tensor& t : *result) {
      Tensor mine = std::move(t);  // the only holder, unless shared elsewhere
      nb::object array = TensorToNumpy(mine, &view);
      if (!view.empty() && view_result != nullptr) {
        array = (*view_result)(array, view);
      }
      out.append(std::move(array));
    }
    return out;
  }

  // The placement report of this model on this machine with this
  // session's config (reports/placement_report.h), explained.
  nb::object Placement() const {
    PlacementRequest request;
    request.model_name = source_.name();
    request.explain = true;
    const RuntimeConfig& config = session_->config();
    absl::StatusOr<PlacementReport> report;
    {
      nb::gil_scoped_release release;
      absl::StatusOr<std::unique_ptr<const Graph>> graph =
          LoadModelSource(source_, onnx_options_);
      report = graph.ok() ? PlaceForReport(request, config, *std::move(graph))
                          : absl::StatusOr<PlacementReport>(graph.status());
    }
    return JsonToPython(PlacementReportJson(ValueOrThrow(std::move(report))));
  }

  // The bench report (reports/bench_report.h) of this session as (dict,
  // text); inputs not fed get random values from `seed`. `trace`: a Chrome
  // trace of the profiled step is written there.
  std::pair<nb::object, std::string> Bench(
      const std::vector<std::string>& names, nb::sequence values, int warmup,
      int runs, double seconds, int top, const std::string& trace,
      uint64_t seed, const std::string& io_device) {
    Feeds feeds = ToFeeds(names, values);
    if (!trace.empty()) ThrowIfError(CheckOutputFile(trace, "trace"));
    BenchSettings settings;
    settings.model_name = source_.name();
    settings.warmup = warmup;
    settings.runs = runs;
    settings.seconds = seconds;
    settings.top = top;
    settings.io_device = io_device;
    absl::StatusOr<BenchReport> report;
    {
      nb::gil_scoped_release release;
      std::vector<std::string> notes;
      absl::Status made = absl::OkStatus();
      if (feeds.size() < session_->graph().inputs().size()) {
        Feeds random;
        made = MakeFeeds(session_->graph(), {}, true, seed, &random, &notes,
                         EffectiveResourceLimits(session_->config()));
        for (std::pair<std::string, Tensor>& f : random) {
          bool given = false;
          for (const auto& g : feeds) given = given || g.first == f.first;
          if (!given) feeds.push_back(std::move(f));
        }
      }
      report = made.ok() ? BenchSession(*session_, feeds, settings,
                                        create_seconds_, std::move(notes))
                         : absl::StatusOr<BenchReport>(made);
      if (report.ok() && !trace.empty()) {
        absl::Status written = WriteChromeTrace(*report->profiled_step, trace);
        if (!written.ok()) report = written;
      }
    }
    ThrowIfError(report.status());
    std::ostringstream text;
    PrintBenchReport(*report, text);
    return {JsonToPython(BenchReportJson(*report)), text.str()};
  }

  // Seconds per Session::Run call over `iterations` calls from C++ with
  // these feeds, results dropped: the baseline bench/python_overhead.py
  // compares `run` from Python with.
  double TimeNativeRun(const std::vector<std::string>& names,
                       nb::sequence values, int iterations) {
    Feeds feeds = ToFeeds(names, values);
    absl::Status status = absl::OkStatus();
    Clock::time_point t0;
    Clock::time_point t1;
    {
      nb::gil_scoped_release release;
      t0 = Clock::now();
      for (int i = 0; i < iterations && status.ok(); ++i) {
        status = session_->Run(feeds).status();
      }
      t1 = Clock::now();
    }
    ThrowIfError(status);
    return std::chrono::duration<double>(t1 - t0).count() / iterations;
  }

  // `value` (a feed as `run` takes it) copied to `device` through
  // Session::CopyTo: a sluice.DeviceArray on a GPU of the session, a NumPy
  // array on the CPU. For IO binding (sluice/ort.py).
  nb::object CopyTo(nb::handle value, const std::string& device) {
    Tensor t = FeedTensor("", value, "", *session_);
    GpuDevice* gpu = OutputGpu(device, "copy to device");
    absl::StatusOr<Tensor> copied;
    {
      nb::gil_scoped_release release;
      copied = session_->CopyTo(t, gpu != nullptr ? gpu->name() : "/cpu:0");
    }
    Tensor result = ValueOrThrow(std::move(copied));
    if (gpu != nullptr) {
      CheckDlpackExportable(result.dtype());
      return nb::cast(DeviceArray{nb::find(this), result, gpu->physical_index()});
    }
    std::string view;
    nb::object array = TensorToNumpy(result, &view);
    if (!view.empty() && view_result != nullptr) array = (*view_result)(array, view);
    return array;
  }

  std::vector<std::string> Log() const { return session_->log(); }
  std::string ConfigText() const { return sluice::ConfigText(session_->config()); }
  int Rank() const { return session_->rank(); }
  int WorldSize() const { return session_->world_size(); }

  // The ranks other than 0 of a job (config `cluster`): runs this rank's
  // part of each of rank 0's steps until rank 0's session ends
  // (Session::Serve), the GIL released; `names`/`values`: the feeds given
  // on this rank (StepOptions::feeds_on_ranks on rank 0).
  void Serve(const std::vector<std::string>& names, nb::sequence values) {
    Feeds feeds = ToFeeds(names, values);
    absl::Status served;
    {
      nb::gil_scoped_release release;
      served = session_->Serve(feeds);
    }
    ThrowIfError(served);
  }

  int64_t ReleaseUnusedMemory() {
    nb::gil_scoped_release release;
    return session_->ReleaseUnusedMemory();
  }
  nb::dict Stats() const {
    const Session::Stats s = session_->stats();
    nb::dict d;
    d["runs"] = s.runs;
    d["plans_compiled"] = s.plans_compiled;
    d["plans_cached"] = s.plans_cached;
    d["plans_evicted"] = s.plans_evicted;
    d["plan_cache_bytes"] = s.plan_cache_bytes;
    d["gpu_graphs"] = s.gpu_graphs;
    d["gpu_graph_steps"] = s.gpu_graph_steps;
    d["host_copies_direct"] = s.host_copies_direct;
    d["host_copies_staged"] = s.host_copies_staged;
    d["gpu_graph_direct_feeds"] = s.gpu_graph_direct_feeds;
    d["gpu_graph_copied_feeds"] = s.gpu_graph_copied_feeds;
    d["gpu_kernel_host_waits"] = s.gpu_kernel_host_waits;
    d["gpu_graph_why_not"] = s.gpu_graph_why_not;
    return d;
  }
  std::vector<std::string> Devices() const {
    std::vector<std::string> names;
    for (Device* d : session_->devices()) names.push_back(d->name());
    return names;
  }

 private:
  static SpecTuple Spec(const std::string& name, DataType dtype,
                        const Shape& shape, std::vector<std::string> names) {
    std::vector<int64_t> dims(shape.dims().begin(), shape.dims().end());
    if (names.size() != dims.size()) names.assign(dims.size(), "");
    return {name, DataTypeName(dtype), std::move(dims), std::move(names),
            shape.unknown_rank() ? -1 : shape.rank()};
  }

  // The session GPU `name` names ("gpu:0", "/gpu:1"); null for "" or a
  // CPU. Throws INVALID_ARGUMENT for a name that does not parse or a GPU
  // the session does not use.
  GpuDevice* OutputGpu(const std::string& name,
                       const char* what = "output_device") const {
    if (name.empty()) return nullptr;
    DeviceName parsed = ValueOrThrow(ParseDeviceName(name));
    if (parsed.type == DeviceType::kCpu) return nullptr;
    std::vector<std::string> names;
    for (Device* d : session_->devices()) {
      names.push_back(d->name());
      if (d->type() == DeviceType::kGpu &&
          (parsed.index < 0 || d->index() == parsed.index)) {
        return static_cast<GpuDevice*>(d);
      }
    }
    throw StatusError(absl::InvalidArgumentError(absl::StrCat(
        what, " '", name, "' is not a device of this session; it uses ",
        absl::StrJoin(names, ", "))));
  }

  // The dtype of graph input `name`, for converting a list; "" otherwise.
  std::string ExpectedDtype(const std::string& name) const {
    for (const auto& [input, dtype] : input_dtypes_) {
      if (input == name) return dtype;
    }
    return "";
  }

  // Fixed after construction.
  ModelSource source_;
  OnnxImportOptions onnx_options_;
  std::unique_ptr<Session> session_;
  absl::Status status_;
  double create_seconds_ = 0;
  std::vector<std::pair<std::string, std::string>> input_dtypes_;
};

}  // namespace

void BindSession(nb::module_& m) {
  m.def(
      "_set_converters",
      [](nb::object normalize, nb::object view) {
        if (normalize_feed == nullptr) normalize_feed = new nb::object();
        if (view_result == nullptr) view_result = new nb::object();
        *normalize_feed = std::move(normalize);
        *view_result = std::move(view);
      },
      "Internal: the feed normaliser and result viewer of sluice.session.");
  // A result left on a GPU: each __dlpack__ call hands out a new capsule
  // over the same memory (a capsule is consumed once), as array-API
  // producers do.
  nb::class_<DeviceArray>(m, "DeviceArray")
      .def(
          "__dlpack__",
          [](const DeviceArray& a, nb::kwargs) {
            // GPU results are finished when run() returns: any stream may
            // read them, so `stream` needs no wait.
            return TensorToDlpack(a.tensor, a.cuda_device_id, a.keep_alive);
          },
          "A DLPack capsule over the result (shared, not copied).")
      .def(
          "__dlpack_device__",
          [](const DeviceArray& a) {
            return nb::make_tuple(2, a.cuda_device_id);  // kDLCUDA
          },
          "(2, CUDA device id): the result is in that GPU's memory.")
      .def_prop_ro(
          "shape",
          [](const DeviceArray& a) {
            nb::list dims;
            for (int i = 0; i < a.tensor.rank(); ++i) dims.append(a.tensor.dim(i));
            return nb::tuple(dims);
          })
      .def_prop_ro("dtype",
                   [](const DeviceArray& a) {
                     return std::string(DataTypeName(a.tensor.dtype()));
                   })
      .def_prop_ro("data_ptr",
                   [](const DeviceArray& a) {
                     return reinterpret_cast<uintptr_t>(a.tensor.raw_data());
                   })
      .def("__repr__", [](const DeviceArray& a) {
        return absl::StrCat("sluice.DeviceArray(", DataTypeName(a.tensor.dtype()),
                            a.tensor.shape().DebugString(), " on cuda:",
                            a.cuda_device_id, ")");
      });
  nb::class_<PySession>(m, "_Session")
      .def(
          "__init__",
          [](PySession* self, const std::string& path, nb::bytes bytes,
             const std::string& format, const std::string& config_text,
             const std::string& device, const std::vector<std::string>& dims) {
            ModelSource source;
            source.path = path;
            source.bytes.assign(bytes.c_str(), bytes.size());
            source.format = format;
            new (self) PySession(std::move(source), config_text, device, dims);
          },
          nb::arg("path"), nb::arg("data"), nb::arg("format"),
          nb::arg("config_text"), nb::arg("device"), nb::arg("dims"))
      .def("inputs", &PySession::Inputs)
      .def("outputs", &PySession::Outputs)
      .def("run", &PySession::Run, nb::arg("fetches"), nb::arg("names"),
           nb::arg("values"), nb::arg("output_device") = "",
           nb::arg("timeout") = 0.0, nb::arg("interruptible") = false)
      .def("placement", &PySession::Placement)
      .def("bench", &PySession::Bench, nb::arg("names"),
           nb::arg("values"), nb::arg("warmup"), nb::arg("runs"),
           nb::arg("seconds"), nb::arg("top"), nb::arg("trace"),
           nb::arg("seed"), nb::arg("io_device") = "")
      .def("_time_native_run", &PySession::TimeNativeRun, nb::arg("names"),
           nb::arg("values"), nb::arg("iterations"))
      .def("copy_to", &PySession::CopyTo, nb::arg("value"), nb::arg("device"))
      .def("log", &PySession::Log)
      .def("config_text", &PySession::ConfigText)
      .def("release_unused_memory", &PySession::ReleaseUnusedMemory)
      .def("rank", &PySession::Rank)
      .def("world_size", &PySession::WorldSize)
      .def("serve", &PySession::Serve, nb::arg("names"), nb::arg("values"))
      .def("stats", &PySession::Stats)
      .def("devices", &PySession::Devices);
}

}  // namespace sluice::python
