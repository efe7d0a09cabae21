#include "tools/feeds.h"

#include "optimizer/pipeline.h"

#include <algorithm>
#include <set>
#include <type_traits>

#include "absl/strings/numbers.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/npy.h"
#include "core/npz.h"
#include "core/status_macros.h"
#include "executor/runtime_config.h"
#include "model/model_loader.h"
#include "onnx/importer.h"
#include "onnx/tensor_file.h"
#include "optimizer/pipeline.h"
#include "tools/cli_util.h"

namespace sluice {
namespace {

// The largest value --dim gives a dimension.
constexpr int64_t kMaxDimValue = (int64_t{1} << 31) - 1;

// SplitMix64: a tiny generator with a fixed, platform-independent sequence
// (std:: distributions differ between standard libraries).
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1).
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1p-53; }

 private:
  uint64_t state_;
};

template <typename T>
void FillRandom(Tensor* t, Random* random) {
  T* data = t->data<T>();
  for (int64_t i = 0; i < t->NumElements(); ++i) {
    if constexpr (std::is_same_v<T, bool>) {
      data[i] = (random->Next() & 1) != 0;
    } else if constexpr (std::is_integral_v<T>) {
      data[i] = static_cast<T>(random->Next() % 10);
    } else {
      data[i] = static_cast<T>(static_cast<float>(random->Uniform() * 2.0 - 1.0));
    }
  }
}

absl::StatusOr<Tensor> RandomTensor(DataType dtype, const Shape& shape,
                                    Random* random) {
  ASSIGN_OR_RETURN(Tensor t, Tensor::Create(dtype, shape));
  absl::Status status = absl::OkStatus();
  SLUICE_SWITCH_DTYPE(
      dtype, FillRandom<T>(&t, random),
      status = absl::InvalidArgumentError(
          absl::StrCat("cannot make random values of ", DataTypeName(dtype))));
  RETURN_IF_ERROR(status);
  return t;
}

// Feeds for every graph input not given with --input.
absl::Status AddRandomInputs(const Graph& graph, uint64_t seed,
                             const std::set<std::string>& given, Feeds* feeds,
                             std::vector<std::string>* notes,
                             const ResourceLimits& limits) {
  Random random(seed);
  for (const GraphInput& in : graph.inputs()) {
    if (given.count(in.name) > 0) continue;
    if (in.shape.unknown_rank()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", in.name, "' has an unknown rank, so no random value can "
          "be made for it; give it with --input ", in.name, "=FILE.npy"));
    }
    Shape shape = in.shape;
    for (int i = 0; i < shape.rank(); ++i) {
      if (shape.dim(i) < 0) shape.set_dim(i, 1);
    }
    if (shape != in.shape) {
      notes->push_back(absl::StrCat("random input '", in.name, "': shape ",
                                    in.shape.DebugString(), " run as ",
                                    shape.DebugString(),
                                    " (unknown dimensions become 1)"));
    }
    RETURN_IF_ERROR(CheckCreatedTensor(
        limits, absl::StrCat("random input '", in.name, "'"), in.dtype, shape));
    ASSIGN_OR_RETURN(Tensor t, RandomTensor(in.dtype, shape, &random));
    feeds->emplace_back(in.name, std::move(t));
  }
  return absl::OkStatus();
}

// A float32 tensor converted to bfloat16 (NumPy cannot store bfloat16).
Tensor ToBfloat16(const Tensor& f32) {
  absl::StatusOr<Tensor> t = Tensor::Create(DT_BFLOAT16, f32.shape());
  if (!t.ok()) return f32;
  const float* in = f32.data<float>();
  bfloat16* out = t->data<bfloat16>();
  for (int64_t i = 0; i < f32.NumElements(); ++i) out[i] = bfloat16(in[i]);
  return *std::move(t);
}

// The --input feeds. Errors name the flag or the file.
absl::Status ReadInputs(const Graph& graph,
                        const std::vector<std::string>& specs, Feeds* feeds,
                        std::set<std::string>* given,
                        std::vector<std::string>* notes) {
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos && absl::EndsWith(spec, ".npz")) {
      // Every array of the archive feeds the input of its name.
      if (absl::Status s = CheckRegularFile(spec); !s.ok()) {
        return absl::Status(s.code(),
                            absl::StrCat("--input ", spec, ": ", s.message()));
      }
      ASSIGN_OR_RETURN(std::vector<NamedTensor> arrays, ReadNpz(spec));
      for (auto& [name, t] : arrays) {
        if (!given->insert(name).second) {
          return absl::InvalidArgumentError(absl::StrCat(
              "--input ", name, " is given more than once (", spec, ")"));
        }
        feeds->emplace_back(name, std::move(t));
      }
      continue;
    }
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--input '", spec,
          "': expected NAME=FILE.npy, NAME=FILE.pb or FILE.npz"));
    }
    const std::string name = spec.substr(0, eq);
    const std::string path = spec.substr(eq + 1);
    // Stat first: a FIFO or a device is refused, never opened.
    if (absl::Status s = CheckRegularFile(path); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("--input ", name, ": ",
                                                 s.message()));
    }
    if (!given->insert(name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("--input ", name, " is given more than once"));
    }
    // An ONNX TensorProto holds every dtype (.npy no bfloat16, float8 or
    // 4-bit type); anything else is read as .npy.
    absl::StatusOr<Tensor> t = absl::EndsWith(path, ".pb")
                                   ? ReadOnnxTensorFile(path)
                                   : ReadNpy(path);
    if (!t.ok()) {
      return absl::Status(t.status().code(),
                          absl::StrCat("input '", name, "': ",
                                       t.status().message()));
    }
    const GraphInput* in = graph.FindInput(name);
    if (in != nullptr && in->dtype == DT_BFLOAT16 && t->dtype() == DT_FLOAT) {
      notes->push_back(absl::StrCat("input '", name,
                                    "': float32 file converted to bfloat16"));
      *t = ToBfloat16(*t);
    }
    feeds->emplace_back(name, *std::move(t));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status MakeFeeds(const Graph& graph,
                       const std::vector<std::string>& input_specs,
                       bool random_inputs, uint64_t seed, Feeds* feeds,
                       std::vector<std::string>* notes,
                       const ResourceLimits& limits) {
  std::set<std::string> given;
  RETURN_IF_ERROR(ReadInputs(graph, input_specs, feeds, &given, notes));
  if (random_inputs) {
    RETURN_IF_ERROR(AddRandomInputs(graph, seed, given, feeds, notes, limits));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Session>> OpenSession(
    const std::string& model_path, const ConfigFlagValues& flags,
    const std::vector<std::string>& dims, std::vector<std::string>* notes,
    const CreateOptions& create) {
  ASSIGN_OR_RETURN(RuntimeConfig config, LoadConfigWithFlags(flags, notes));
  OnnxImportOptions onnx_options;
  onnx_options.limits = EffectiveResourceLimits(config);
  for (const std::string& flag : dims) {
    RETURN_IF_ERROR(CheckDimFlag(flag));
    if (absl::Status s = ParseDimValueFlag(flag, &onnx_options); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--dim ", flag, ": ", s.message()));
    }
  }
  if (!dims.empty() && !IsOnnxPath(model_path)) {
    return absl::InvalidArgumentError(
        "--dim names symbolic dimensions of an ONNX model; this model is a "
        "sluice graph (give its input shapes in the graph)");
  }
  std::unique_ptr<Session> session;
  if (dims.empty()) {
    // CreateFromFile: a prepared model (`sluice convert --optimized`) is
    // used as it is when its key matches.
    ASSIGN_OR_RETURN(session,
                     Session::CreateFromFile(model_path, config, create));
  } else {
    if (create.progress) create.progress({"loading the model", "", 0, 0});
    ASSIGN_OR_RETURN(std::unique_ptr<const Graph> graph,
                     LoadModelGraph(model_path, onnx_options));
    ASSIGN_OR_RETURN(session,
                     Session::Create(std::move(graph), config, create));
  }
  // The session notes environment overrides again: keep each line once.
  for (const std::string& line : session->log()) {
    if (std::find(notes->begin(), notes->end(), line) == notes->end()) {
      notes->push_back(line);
    }
  }
  return session;
}

absl::Status CheckDimFlag(const std::string& flag) {
  const size_t eq = flag.rfind('=');
  if (eq == std::string::npos || eq == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--dim '", flag, "': expected NAME=N (e.g. batch=8)"));
  }
  const std::string value = flag.substr(eq + 1);
  int64_t v = 0;
  if (!absl::SimpleAtoi(value, &v) || v < 0 || v > kMaxDimValue) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--dim '", flag, "': the value '", value,
        "' is not an integer from 0 to ", FormatCount(kMaxDimValue)));
  }
  return absl::OkStatus();
}

void AddDimOption(CLI::App* app, std::vector<std::string>* dims) {
  app->add_option("--dim", *dims,
                  "NAME=N: the value of a symbolic ONNX dimension (e.g. "
                  "batch=8), fixed at import (repeatable); random inputs "
                  "then have that size");
}

absl::Status WithFeedHint(const absl::Status& status, const Graph& graph,
                          const Feeds& feeds, bool random_inputs) {
  if (status.code() != absl::StatusCode::kInvalidArgument || random_inputs ||
      feeds.size() >= graph.inputs().size()) {
    return status;
  }
  return absl::Status(status.code(),
                      absl::StrCat(status.message(),
                                   "\n(give each input with --input "
                                   "NAME=FILE.npy, or use --random-inputs)"));
}

}  // namespace sluice
