// What a session starts from (executor/session_model.h).
#include "executor/session_model.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <set>

#include "absl/strings/str_cat.h"
#include "core/build_id.h"
#include "core/fingerprint.h"
#include "core/resource_limits.h"
#include "core/status_macros.h"
#include "executor/runtime_config.h"
#include "graph/data_format.h"
#include "model/model_loader.h"

namespace sluice {
namespace {

std::string YesNo(bool b) { return b ? "yes" : "no"; }

void AddLibraries(const ExecutionProvider& p,
                  std::vector<PreparedKeyPart>* key) {
  for (const LibraryReport& lib : p.Libraries()) {
    PreparedKeyPart part;
    part.set_name(absl::StrCat(std::string(p.name()), " library ", lib.name));
    // A missing library's reason may vary; only its absence matters.
    part.set_value(lib.available ? lib.detail : "not available");
    key->push_back(std::move(part));
  }
}

OptimizationLevel LevelFromName(const std::string& name) {
  if (name == "none") return OPTIMIZATION_NONE;
  if (name == "basic") return OPTIMIZATION_BASIC;
  return OPTIMIZATION_ALL;
}

// The ONNX import options a prepared model's source was imported with.
OnnxImportOptions SourceImportOptions(const PreparedModelHeader& h,
                                      const RuntimeConfig& config) {
  OnnxImportOptions o;
  o.limits = EffectiveResourceLimits(config);
  for (const auto& [name, value] : h.dim_values()) o.dim_values[name] = value;
  for (const PreparedInputShape& s : h.input_shapes()) {
    o.input_shapes[s.input()].assign(s.dims().begin(), s.dims().end());
  }
  return o;
}

absl::Status CheckSourceBytes(const PreparedModelHeader& h);

bool SameStat(const PreparedFileStat& a, const PreparedFileStat& b) {
  return a.size() == b.size() && a.mtime_ns() == b.mtime_ns() &&
         a.ctime_ns() == b.ctime_ns() && a.inode() == b.inode() &&
         a.device() == b.device();
}

// `path`'s fingerprint and size, and in `stat` its stat when the bytes did
// not change while they were read (else inode 0: nothing recorded).
absl::StatusOr<uint64_t> FingerprintAndStat(const std::string& path,
                                            int64_t* size,
                                            PreparedFileStat* stat) {
  absl::StatusOr<PreparedFileStat> before = StatSourceFile(path);
  ASSIGN_OR_RETURN(uint64_t f, FingerprintFile(path, size));
  absl::StatusOr<PreparedFileStat> after = StatSourceFile(path);
  stat->Clear();
  if (before.ok() && after.ok() && SameStat(*before, *after) &&
      before->size() == *size) {
    *stat = *before;
  }
  return f;
}

// OK when the source model and its weights files are the bytes the
// prepared model was made from: by an unchanged stat, else by reading.
absl::Status CheckSourceUnchanged(const PreparedModelHeader& h) {
  if (h.source_path().empty()) {
    return absl::FailedPreconditionError("the file names no source model");
  }
  if (!SourceUnchangedByStat(h.source_path(), h.source_stat())) {
    RETURN_IF_ERROR(CheckSourceBytes(h));
  }
  const std::filesystem::path dir =
      std::filesystem::path(h.source_path()).parent_path();
  for (const PreparedSourceFile& s : h.source_files()) {
    const std::string file = (dir / s.path()).string();
    if (SourceUnchangedByStat(file, s.stat())) continue;
    int64_t n = 0;
    absl::StatusOr<uint64_t> g = FingerprintFile(file, &n);
    if (!g.ok() || n != s.size() || *g != s.fingerprint()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the weights file ", file, " of its source model ",
          g.ok() ? "has changed since it was prepared"
                 : absl::StrCat("cannot be read: ", g.status().message())));
    }
  }
  return absl::OkStatus();
}

// The source model's own bytes against the recorded size and fingerprint.
absl::Status CheckSourceBytes(const PreparedModelHeader& h) {
  int64_t size = 0;
  absl::StatusOr<uint64_t> f = FingerprintFile(h.source_path(), &size);
  if (!f.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("its source model ", h.source_path(),
                     " cannot be read: ", f.status().message()));
  }
  if (size != h.source_size() || *f != h.source_fingerprint()) {
    return absl::FailedPreconditionError(
        absl::StrCat("its source model ", h.source_path(),
                     " has changed since it was prepared"));
  }
  return absl::OkStatus();
}

std::string AbsolutePath(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::absolute(path, ec);
  return ec ? path : abs.lexically_normal().string();
}

// The prepared model in the cache for `source`, when its key is the
// session's and the source is the file it was prepared from; else why not.
absl::StatusOr<PreparedModel> ReadCachedModel(
    const std::string& source, const std::string& cache,
    const RuntimeConfig& config, const ProviderSet& providers) {
  ASSIGN_OR_RETURN(
      PreparedModel cached,
      ReadPreparedModel(cache, PreparedModelKey(config, providers)));
  if (cached.header.source_path() != AbsolutePath(source)) {
    return absl::FailedPreconditionError(
        absl::StrCat("prepared model ", cache, " was made from ",
                     cached.header.source_path(), ", not from ",
                     AbsolutePath(source)));
  }
  // Import options a session does not set (`sluice convert --dim`).
  if (cached.header.dim_values_size() > 0 ||
      cached.header.input_shapes_size() > 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "prepared model ", cache,
        " was imported with fixed dimensions (--dim, --input-shape)"));
  }
  if (absl::Status s = CheckSourceUnchanged(cached.header); !s.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("prepared model ", cache, ": ", s.message()));
  }
  return cached;
}

}  // namespace

absl::StatusOr<PreparedFileStat> StatSourceFile(const std::string& path) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat("cannot stat ", path, ": ",
                                            std::strerror(errno)));
  }
  auto ns = [](const struct timespec& t) {
    return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
  };
  PreparedFileStat out;
  out.set_size(static_cast<int64_t>(st.st_size));
  out.set_mtime_ns(ns(st.st_mtim));
  out.set_ctime_ns(ns(st.st_ctim));
  out.set_inode(static_cast<uint64_t>(st.st_ino));
  out.set_device(static_cast<uint64_t>(st.st_dev));
  out.set_taken_ns(ns(now));
  return out;
}

bool SourceUnchangedByStat(const std::string& path,
                           const PreparedFileStat& recorded,
                           int64_t racy_margin_ns) {
  if (recorded.inode() == 0) return false;
  const int64_t settled = recorded.taken_ns() - racy_margin_ns;
  if (recorded.mtime_ns() >= settled || recorded.ctime_ns() >= settled) {
    return false;
  }
  absl::StatusOr<PreparedFileStat> now = StatSourceFile(path);
  return now.ok() && SameStat(*now, recorded);
}

std::string PreparedModelCachePath(const std::string& source_path,
                                   const RuntimeConfig& config) {
  if (config.prepared_model_cache_dir().empty()) return "";
  const std::string abs = AbsolutePath(source_path);
  const std::string name =
      std::filesystem::path(source_path).filename().string();
  return (std::filesystem::path(config.prepared_model_cache_dir()) /
          absl::StrCat(name, "-", FingerprintHex(Fingerprint64(abs.data(),
                                                               abs.size())),
                       kPreparedModelExtension))
      .string();
}

std::vector<PreparedKeyPart> PreparedModelKey(const RuntimeConfig& config,
                                              const ProviderSet& providers) {
  const OptimizationTarget target = providers.compute().Target();
  const PassOptions o = PassOptionsFromConfig(config, target);
  std::vector<PreparedKeyPart> key;
  auto add = [&key](std::string name, std::string value) {
    PreparedKeyPart p;
    p.set_name(std::move(name));
    p.set_value(std::move(value));
    key.push_back(std::move(p));
  };
  add("format", absl::StrCat(kPreparedModelFormatVersion));
  const std::string& build = SluiceBuildId();
  add("sluice build", build.empty() ? "none" : build);
  add("optimization_level", OptimizationLevelName(config.optimization_level()));
  add("precision", o.reduced_precision == DT_INVALID
                       ? "model"
                       : DataTypeName(o.reduced_precision));
  add("conv_layout", DataFormatName(o.conv_layout));
  add("grouped convolutions stay NCHW", YesNo(o.keep_grouped_convs_nchw));
  add("channels last where it leaves fewer Transposes",
      YesNo(o.nhwc_where_fewer_transposes));
  add("smooth activations fused into convolutions",
      YesNo(o.fuse_conv_smooth_activations));
  add("resource_limits",
      absl::StrCat("created ", o.limits.max_created_tensor_bytes,
                   ", folded constant ", o.limits.max_folded_constant_bytes,
                   ", folded ", o.limits.max_folded_bytes));
  add("provider", target.provider);
  // The libraries whose presence and versions the target's choices follow
  // (oneDNN's for the CPU's layout, cuDNN's for the GPUs'): those of the
  // provider the passes ran for, not of every provider the machine has.
  AddLibraries(providers.compute(), &key);
  return key;
}

absl::StatusOr<SessionModel> LoadSessionModel(const std::string& path,
                                              const RuntimeConfig& config,
                                              const ProviderSet& providers) {
  SessionModel out;
  OnnxImportOptions onnx_options;
  onnx_options.limits = EffectiveResourceLimits(config);
  if (!IsPreparedModelFile(path)) {
    const std::string cache = PreparedModelCachePath(path, config);
    if (!cache.empty()) {
      std::error_code ec;
      if (std::filesystem::exists(cache, ec)) {
        absl::StatusOr<PreparedModel> cached =
            ReadCachedModel(path, cache, config, providers);
        if (cached.ok()) {
          out.graph = std::move(cached->graph);
          out.prepared = true;
          out.level = LevelFromName(cached->header.optimization_level());
          out.removed_nodes.assign(cached->header.removed_nodes().begin(),
                                   cached->header.removed_nodes().end());
          out.log.push_back(absl::StrCat(
              "optimizer: passes not run: started from the prepared-model "
              "cache ", cache, " (", cached->header.passes_size(),
              " passes, level ", cached->header.optimization_level(), ")"));
          return out;
        }
        out.log.push_back(absl::StrCat(
            "prepared-model cache: ", cached.status().message(),
            "; loading ", path, ", running the passes and writing the "
            "cache again"));
      } else {
        out.log.push_back(absl::StrCat(
            "prepared-model cache: no prepared model of ", path, " yet; ",
            cache, " is written after the passes"));
      }
    }
    ASSIGN_OR_RETURN(out.graph, LoadModelGraph(path, onnx_options));
    if (!cache.empty()) {
      absl::StatusOr<PreparedModelHeader> header = PreparedSourceHeader(
          path, onnx_options, *out.graph, PreparedModelKey(config, providers));
      if (header.ok()) {
        out.cache_path = cache;
        out.cache_header = *std::move(header);
      } else {
        out.log.push_back(absl::StrCat("prepared-model cache: not written: ",
                                       header.status().message()));
      }
    }
    return out;
  }
  absl::StatusOr<PreparedModel> prepared =
      ReadPreparedModel(path, PreparedModelKey(config, providers));
  if (prepared.ok()) {
    out.graph = std::move(prepared->graph);
    out.prepared = true;
    out.level = LevelFromName(prepared->header.optimization_level());
    out.removed_nodes.assign(prepared->header.removed_nodes().begin(),
                             prepared->header.removed_nodes().end());
    out.log.push_back(absl::StrCat("optimizer: passes not run: ", path,
                                   " was prepared by `sluice "
                                   "convert --optimized` for this setup (",
                                   prepared->header.passes_size(),
                                   " passes, level ",
                                   prepared->header.optimization_level(), ")"));
    return out;
  }
  // Refused: its source instead, if it is still the same model.
  const absl::Status refusal = prepared.status();
  absl::StatusOr<PreparedModelHeader> header = ReadPreparedModelHeader(path);
  absl::Status source =
      header.ok() ? CheckSourceUnchanged(*header)
                  : absl::FailedPreconditionError("its header cannot be read");
  if (!source.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        refusal.message(),
        "; and it cannot fall back to its source: ", source.message()));
  }
  out.log.push_back(absl::StrCat(refusal.message(), "; loading its source ",
                                 header->source_path(),
                                 " and running the passes instead"));
  ASSIGN_OR_RETURN(out.graph,
                   LoadModelGraph(header->source_path(),
                                  SourceImportOptions(*header, config)));
  return out;
}

absl::StatusOr<PreparedModelHeader> PreparedSourceHeader(
    const std::string& source_path, const OnnxImportOptions& onnx_options,
    const Graph& loaded, std::vector<PreparedKeyPart> key) {
  PreparedModelHeader h;
  for (PreparedKeyPart& p : key) *h.add_key() = std::move(p);
  h.set_source_path(AbsolutePath(source_path));
  int64_t size = 0;
  ASSIGN_OR_RETURN(uint64_t f, FingerprintAndStat(source_path, &size,
                                                  h.mutable_source_stat()));
  h.set_source_size(size);
  h.set_source_fingerprint(f);
  // The weights files the loaded graph's constants were read from.
  std::set<std::string> files;
  for (const NodeDef& n : loaded.def().node()) {
    if (n.op() != "Const") continue;
    auto v = n.attr().find("value");
    if (v == n.attr().end() || !v->second.has_tensor()) continue;
    const TensorProto& t = v->second.tensor();
    if (t.has_external() && !t.external().path().empty()) {
      files.insert(t.external().path());
    }
  }
  const std::filesystem::path dir =
      std::filesystem::path(source_path).parent_path();
  for (const std::string& file : files) {
    PreparedSourceFile* s = h.add_source_files();
    s->set_path(file);
    int64_t n = 0;
    ASSIGN_OR_RETURN(uint64_t g, FingerprintAndStat((dir / file).string(), &n,
                                                    s->mutable_stat()));
    s->set_size(n);
    s->set_fingerprint(g);
  }
  for (const auto& [name, value] : onnx_options.dim_values) {
    (*h.mutable_dim_values())[name] = value;
  }
  for (const auto& [input, dims] : onnx_options.input_shapes) {
    PreparedInputShape* s = h.add_input_shapes();
    s->set_input(input);
    for (int64_t d : dims) s->add_dims(d);
  }
  return h;
}

std::string WritePreparedModelCache(const Graph& graph,
                                    const SessionModel& model) {
  const std::filesystem::path path(model.cache_path);
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  absl::Status s =
      ec ? absl::PermissionDeniedError(
               absl::StrCat("cannot create ", path.parent_path().string(),
                            ": ", ec.message()))
         : WritePreparedModel(graph, model.cache_header, model.cache_path);
  if (!s.ok()) {
    return absl::StrCat("prepared-model cache: not written: ", s.message());
  }
  return absl::StrCat("prepared-model cache: wrote ", model.cache_path,
                      " (the next session of this setup starts from it)");
}

void RecordOptimization(const OptimizedGraph& opt, PreparedModelHeader* h) {
  h->set_optimization_level(OptimizationLevelName(opt.level));
  h->set_nodes_before(opt.nodes_before);
  for (const std::string& name : opt.removed_nodes) h->add_removed_nodes(name);
  for (const PassRecord& r : opt.records) {
    PreparedPass* p = h->add_passes();
    p->set_pass(r.pass);
    p->set_nodes_before(r.nodes_before);
    p->set_nodes_after(r.nodes_after);
    p->set_changes(static_cast<int32_t>(r.changes.size()));
    p->set_seconds(r.seconds);
    p->set_error(r.error);
  }
}

}  // namespace sluice
