// Model load time for 1 GiB of weights in an external file, through the
// loader and the session API, on the CPU and on /gpu:0.
//
//   build/bench/load_bench --benchmark_counters_tabular=true
//
// On first use the program writes a model into a fresh temporary folder
// ($TMPDIR, else /tmp): load_bench.pb, and load_bench.weights with four
// 8192 x 8192 float32 matrices (256 MiB each, 1 GiB in all, at 64-byte
// aligned offsets) that four chained MatMuls apply to a [1, 8192] input, so
// a step reads every weight. The folder is removed at exit (and on SIGINT or
// SIGTERM). The weights file has just been written, so it is read from the
// page cache: these are warm-cache figures (parsing and copying, not disk).
//
// BM_LoadGraph1GiB: LoadGraph (graph/loader.h): parse the .pb, read the
//   weights, build and validate the graph.
// BM_CreateSession1GiB/{cpu,gpu}: Session::CreateFromFile with the default
//   config (cpu: use_gpu false): the load above, then devices and placement
//   (on the GPU this includes the arena reserving the card).
// BM_ImportOnnx1GiB/{mapped,embedded}: the same model as load_bench.onnx
//   (libonnx's ModelProto, the four weights as ONNX external data in the
//   same file): LoadModel then BuildGraph (model/model_loader.h). mapped:
//   the default, the Consts refer to the weights file, which BuildGraph maps;
//   embedded: OnnxImportOptions::embed_external_data, the path every ONNX
//   import took before: read the weights, copy them into the GraphDef, parse
//   them back. Needs libonnx (SLUICE_HAVE_ONNX), else skipped.
// BM_CreateSessionOnnx1GiB/{cpu,cpu_embedded}: Session::CreateFromFile of
//   the .onnx (cpu), or the embedded LoadModel, BuildGraph and
//   Session::Create (cpu_embedded), on the CPU.
// BM_FirstRun1GiB/{cpu,gpu}: the first Run of a fresh session: plan
//   compilation, the constants copied to the device (on the GPU), the four
//   MatMuls and the fetch.
// Counters: `s`, seconds per operation (mean of 3 timed iterations after
// one untimed, which on the GPU also starts CUDA), and `GB/s`, the 1 GiB of
// weights over that time; the ONNX rows add `cpu_s`, the process's CPU
// seconds per operation (all threads), which a machine busy with other work
// inflates less than the wall time. Time is the same mean; the CPU column covers whole
// iterations (untimed set-up and teardown too), so read Time or `s`. GPU rows
// skip, with the reason, where no GPU is usable. Needs 1 GiB free in the
// temporary folder and about 1.2 GiB of RAM on the CPU.
#include <benchmark/benchmark.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "device/device.h"
#include "device/discovery.h"
#include "executor/session.h"
#include "graph/loader.h"
#include "model/model_loader.h"
#if SLUICE_HAVE_ONNX
#include "onnx/onnx_pb.h"
#endif

namespace sluice {
namespace {

constexpr int64_t kDim = 8192;
constexpr int kMatrices = 4;
constexpr int64_t kMatrixBytes = kDim * kDim * 4;              // 256 MiB
constexpr int64_t kWeightBytes = kMatrixBytes * kMatrices;     // 1 GiB
constexpr const char* kModelName = "load_bench.pb";
constexpr const char* kWeightsName = "load_bench.weights";
constexpr const char* kOnnxName = "load_bench.onnx";

// The written files, as C strings so that the signal handler may remove
// them with unlink and rmdir alone. Empty until written.
char g_dir[4096];
char g_model[4096];
char g_weights[4096];
char g_onnx[4096];

void RemoveModel() {
  if (g_weights[0] != '\0') unlink(g_weights);
  if (g_onnx[0] != '\0') unlink(g_onnx);
  if (g_model[0] != '\0') unlink(g_model);
  if (g_dir[0] != '\0') rmdir(g_dir);
}

void RemoveModelOnSignal(int sig) {
  RemoveModel();
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

absl::Status CopyPath(const std::filesystem::path& p, char* out) {
  const std::string s = p.string();
  if (s.size() >= sizeof(g_dir)) {
    return absl::InvalidArgumentError(
        absl::StrCat("temporary path too long: ", s));
  }
  std::memcpy(out, s.c_str(), s.size() + 1);
  return absl::OkStatus();
}

// Matrix k, row-major, in [-1, 1] / sqrt(kDim), so that the activations stay
// near 1 through the chain.
absl::Status WriteWeights(const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return absl::PermissionDeniedError(absl::StrCat("cannot write ", path));
  constexpr int64_t kRowsPerChunk = 128;  // 4 MiB
  std::vector<float> chunk(kRowsPerChunk * kDim);
  const float scale = 1.0f / 90.50967f;  // 1 / sqrt(8192)
  for (int k = 0; k < kMatrices; ++k) {
    for (int64_t row = 0; row < kDim; row += kRowsPerChunk) {
      for (int64_t i = 0; i < kRowsPerChunk * kDim; ++i) {
        const uint32_t x = static_cast<uint32_t>(row * kDim + i) * 2654435761u +
                           static_cast<uint32_t>(k) * 40503u;
        chunk[i] = (static_cast<float>(x % 2001) / 1000.0f - 1.0f) * scale;
      }
      out.write(reinterpret_cast<const char*>(chunk.data()),
                static_cast<std::streamsize>(chunk.size() * sizeof(float)));
    }
  }
  out.close();
  if (!out) return absl::DataLossError(absl::StrCat("short write to ", path));
  return absl::OkStatus();
}

// x [1, kDim] -> MatMul with w0 .. w3 (Consts in the weights file) -> y.
GraphDef ModelDef() {
  GraphDef def;
  NodeDef* x = def.add_node();
  x->set_name("x");
  x->set_op("Input");
  (*x->mutable_attr())["dtype"].set_type(DT_FLOAT);
  TensorShapeProto* xs = (*x->mutable_attr())["shape"].mutable_shape();
  xs->add_dim(1);
  xs->add_dim(kDim);
  std::string prev = "x";
  for (int k = 0; k < kMatrices; ++k) {
    NodeDef* w = def.add_node();
    w->set_name(absl::StrCat("w", k));
    w->set_op("Const");
    TensorProto* value = (*w->mutable_attr())["value"].mutable_tensor();
    value->set_dtype(DT_FLOAT);
    value->mutable_shape()->add_dim(kDim);
    value->mutable_shape()->add_dim(kDim);
    ExternalData* ext = value->mutable_external();
    ext->set_path(kWeightsName);
    ext->set_offset(k * kMatrixBytes);  // a multiple of 64
    ext->set_length(kMatrixBytes);
    NodeDef* mm = def.add_node();
    mm->set_name(absl::StrCat("h", k));
    mm->set_op("MatMul");
    mm->add_input(prev);
    mm->add_input(w->name());
    prev = mm->name();
  }
  def.mutable_signature()->add_inputs()->set_name("x");
  TensorInfo* out = def.mutable_signature()->add_outputs();
  out->set_name("y");
  out->set_tensor(prev);
  return def;
}

#if SLUICE_HAVE_ONNX
// ModelDef as an ONNX model: the weights are initializers in the same
// external file and range.
absl::Status WriteOnnxModel(const std::string& path) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  onnx::OperatorSetIdProto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  onnx::GraphProto* g = model.mutable_graph();
  g->set_name("load_bench");
  auto add_value = [](onnx::ValueInfoProto* v, const std::string& name) {
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    tt->mutable_shape()->add_dim()->set_dim_value(1);
    tt->mutable_shape()->add_dim()->set_dim_value(kDim);
  };
  add_value(g->add_input(), "x");
  std::string prev = "x";
  for (int k = 0; k < kMatrices; ++k) {
    onnx::TensorProto* w = g->add_initializer();
    w->set_name(absl::StrCat("w", k));
    w->set_data_type(onnx::TensorProto::FLOAT);
    w->add_dims(kDim);
    w->add_dims(kDim);
    w->set_data_location(onnx::TensorProto::EXTERNAL);
    const std::pair<const char*, std::string> entries[] = {
        {"location", kWeightsName},
        {"offset", std::to_string(k * kMatrixBytes)},
        {"length", std::to_string(kMatrixBytes)}};
    for (const auto& [key, value] : entries) {
      onnx::StringStringEntryProto* e = w->add_external_data();
      e->set_key(key);
      e->set_value(value);
    }
    onnx::NodeProto* mm = g->add_node();
    mm->set_op_type("MatMul");
    mm->set_name(absl::StrCat("h", k));
    mm->add_input(prev);
    mm->add_input(w->name());
    prev = mm->name();
    mm->add_output(prev);
  }
  add_value(g->add_output(), prev);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!model.SerializeToOstream(&out)) {
    return absl::PermissionDeniedError(absl::StrCat("cannot write ", path));
  }
  return absl::OkStatus();
}
#endif

absl::StatusOr<std::string> WriteModel() {
  std::filesystem::path tmpl =
      std::filesystem::temp_directory_path() / "sluice_load_bench_XXXXXX";
  std::string dir = tmpl.string();
  if (mkdtemp(dir.data()) == nullptr) {
    return absl::PermissionDeniedError(
        absl::StrCat("mkdtemp ", tmpl.string(), ": ", std::strerror(errno)));
  }
  const std::filesystem::path model = std::filesystem::path(dir) / kModelName;
  const std::filesystem::path weights =
      std::filesystem::path(dir) / kWeightsName;
  // Set before writing, so that a failure or a signal midway cleans up too.
  RETURN_IF_ERROR(CopyPath(dir, g_dir));
  RETURN_IF_ERROR(CopyPath(model, g_model));
  RETURN_IF_ERROR(CopyPath(weights, g_weights));
  RETURN_IF_ERROR(WriteWeights(weights.string()));
  RETURN_IF_ERROR(SaveGraphDef(ModelDef(), model.string()));
#if SLUICE_HAVE_ONNX
  const std::filesystem::path onnx = std::filesystem::path(dir) / kOnnxName;
  RETURN_IF_ERROR(CopyPath(onnx, g_onnx));
  RETURN_IF_ERROR(WriteOnnxModel(onnx.string()));
#endif
  return model.string();
}

// The model's path, written on the first call; null (and the benchmark
// skipped) when it cannot be written.
const std::string* ModelPath(benchmark::State& state) {
  static const absl::StatusOr<std::string>* const model =
      new absl::StatusOr<std::string>(WriteModel());
  if (!model->ok()) {
    state.SkipWithError(std::string(model->status().message()).c_str());
    return nullptr;
  }
  return &**model;
}

// The ONNX model's path (written with the .pb one); null (and the benchmark
// skipped) without libonnx or when it cannot be written.
const std::string* OnnxPath(benchmark::State& state) {
  if (ModelPath(state) == nullptr) return nullptr;  // writes both
  if (!OnnxImportAvailable()) {
    state.SkipWithError("sluice was built without libonnx");
    return nullptr;
  }
  static const std::string* const onnx = new std::string(g_onnx);
  return onnx;
}

// False (and the benchmark skipped, with the reason) without a usable GPU.
bool GpuUsable(benchmark::State& state) {
  const DeviceInventory inv = DiscoverDevices();
  std::string reason = inv.no_gpu_reason;
  for (const GpuInfo& g : inv.gpus) {
    if (g.usable) return true;
    if (reason.empty()) reason = absl::StrCat(g.name, ": ", g.unusable_reason);
  }
  state.SkipWithError(absl::StrCat("no usable GPU: ", reason).c_str());
  return false;
}

RuntimeConfig ConfigFor(bool gpu) {
  RuntimeConfig config;
  if (!gpu) config.set_use_gpu(false);
  return config;
}

// A session from the model file; on the GPU, one whose MatMuls are there.
absl::StatusOr<std::unique_ptr<Session>> OpenSession(const std::string& path,
                                                     bool gpu,
                                                     double* seconds) {
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::unique_ptr<Session>> s =
      Session::CreateFromFile(path, ConfigFor(gpu));
  *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                           start).count();
  if (!s.ok() || !gpu) return s;
  const Node* last = (*s)->graph().FindNode(absl::StrCat("h", kMatrices - 1));
  if (last == nullptr ||
      (*s)->assignment()[last->id()]->type() != DeviceType::kGpu) {
    return absl::FailedPreconditionError("the MatMuls were not placed on a GPU");
  }
  return s;
}

// Calls `step` once untimed, then once per iteration; `step` returns the
// seconds of the part it times. Sets `s` and `GB/s`.
void Measure(benchmark::State& state,
             const std::function<absl::StatusOr<double>()>& step) {
  absl::StatusOr<double> warm = step();
  if (!warm.ok()) {
    state.SkipWithError(std::string(warm.status().message()).c_str());
    return;
  }
  double total = 0;
  for (auto _ : state) {
    absl::StatusOr<double> t = step();
    if (!t.ok()) {
      state.SkipWithError(std::string(t.status().message()).c_str());
      return;
    }
    state.SetIterationTime(*t);
    total += *t;
  }
  const double mean = total / static_cast<double>(state.iterations());
  state.counters["s"] = mean;
  state.counters["GB/s"] = static_cast<double>(kWeightBytes) / mean * 1e-9;
}

double ProcessCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) +
         1e-9 * static_cast<double>(ts.tv_nsec);
}

// Measure, adding `cpu_s`: the process's CPU seconds per timed step (the
// untimed first step left out).
void MeasureWithCpu(benchmark::State& state,
                    const std::function<absl::StatusOr<double>()>& step) {
  double cpu = 0;
  int steps = 0;
  Measure(state, [&]() -> absl::StatusOr<double> {
    const double start = ProcessCpuSeconds();
    absl::StatusOr<double> t = step();
    if (steps++ > 0) cpu += ProcessCpuSeconds() - start;
    return t;
  });
  if (steps > 1) state.counters["cpu_s"] = cpu / (steps - 1);
}

void BM_LoadGraph1GiB(benchmark::State& state) {
  const std::string* path = ModelPath(state);
  if (path == nullptr) return;
  Measure(state, [&]() -> absl::StatusOr<double> {
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<std::unique_ptr<const Graph>> g = LoadGraph(*path);
    const double seconds = std::chrono::duration<double>(
        std::chrono::steady_clock::now() - start).count();
    if (!g.ok()) return g.status();
    return seconds;  // the graph is freed outside the timed part
  });
}

void BM_CreateSession1GiB(benchmark::State& state, bool gpu) {
  if (gpu && !GpuUsable(state)) return;
  const std::string* path = ModelPath(state);
  if (path == nullptr) return;
  Measure(state, [&]() -> absl::StatusOr<double> {
    double seconds = 0;
    absl::StatusOr<std::unique_ptr<Session>> s =
        OpenSession(*path, gpu, &seconds);
    if (!s.ok()) return s.status();
    return seconds;
  });
}

// LoadModel then BuildGraph of the .onnx, mapped or embedded (see the top).
absl::StatusOr<std::unique_ptr<const Graph>> ImportOnnxGraph(
    const std::string& path, bool embedded) {
  OnnxImportOptions options;
  options.embed_external_data = embedded;
  ASSIGN_OR_RETURN(LoadedGraphDef model, LoadModel(path, options));
  return BuildGraph(model.def, model.source);
}

void BM_ImportOnnx1GiB(benchmark::State& state, bool embedded) {
  const std::string* path = OnnxPath(state);
  if (path == nullptr) return;
  MeasureWithCpu(state, [&]() -> absl::StatusOr<double> {
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<std::unique_ptr<const Graph>> g =
        ImportOnnxGraph(*path, embedded);
    const double seconds = std::chrono::duration<double>(
        std::chrono::steady_clock::now() - start).count();
    if (!g.ok()) return g.status();
    return seconds;
  });
}

void BM_CreateSessionOnnx1GiB(benchmark::State& state, bool embedded) {
  const std::string* path = OnnxPath(state);
  if (path == nullptr) return;
  MeasureWithCpu(state, [&]() -> absl::StatusOr<double> {
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<std::unique_ptr<Session>> s;
    if (embedded) {
      absl::StatusOr<std::unique_ptr<const Graph>> g =
          ImportOnnxGraph(*path, true);
      if (!g.ok()) return g.status();
      s = Session::Create(*std::move(g), ConfigFor(false));
    } else {
      s = Session::CreateFromFile(*path, ConfigFor(false));
    }
    const double seconds = std::chrono::duration<double>(
        std::chrono::steady_clock::now() - start).count();
    if (!s.ok()) return s.status();
    return seconds;
  });
}

void BM_FirstRun1GiB(benchmark::State& state, bool gpu) {
  if (gpu && !GpuUsable(state)) return;
  const std::string* path = ModelPath(state);
  if (path == nullptr) return;
  std::vector<float> xs(kDim);
  for (int64_t i = 0; i < kDim; ++i) {
    xs[i] = static_cast<float>(i % 17) * 0.1f - 0.8f;
  }
  const Feeds feeds = {{"x", Tensor::FromVector(xs, Shape({1, kDim}))}};
  Measure(state, [&]() -> absl::StatusOr<double> {
    double create_seconds = 0;
    absl::StatusOr<std::unique_ptr<Session>> s =
        OpenSession(*path, gpu, &create_seconds);
    if (!s.ok()) return s.status();
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<std::vector<Tensor>> out = (*s)->Run(feeds);
    const double seconds = std::chrono::duration<double>(
        std::chrono::steady_clock::now() - start).count();
    if (!out.ok()) return out.status();
    return seconds;
  });
}

BENCHMARK(BM_LoadGraph1GiB)->Iterations(3)->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CreateSession1GiB, cpu, false)->Iterations(3)
    ->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CreateSession1GiB, gpu, true)->Iterations(3)
    ->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ImportOnnx1GiB, mapped, false)->Iterations(3)
    ->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ImportOnnx1GiB, embedded, true)->Iterations(3)
    ->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CreateSessionOnnx1GiB, cpu, false)->Iterations(3)
    ->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CreateSessionOnnx1GiB, cpu_embedded, true)->Iterations(3)
    ->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_FirstRun1GiB, cpu, false)->Iterations(3)
    ->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_FirstRun1GiB, gpu, true)->Iterations(3)
    ->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  std::signal(SIGINT, sluice::RemoveModelOnSignal);
  std::signal(SIGTERM, sluice::RemoveModelOnSignal);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  sluice::RemoveModel();
  return 0;
}
