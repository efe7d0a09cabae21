// SessionModel: the graph a session starts from, and whether the
// optimisation passes already ran on it. A model file (.onnx, .pb, .pbtxt)
// is loaded and the session runs the passes; a prepared model
// (model/prepared_model.h, written by `sluice convert --optimized`) whose
// key matches the session's is mapped and used as it is, passes not run. A
// prepared model that is refused (another key, format version, a truncated
// or corrupt file) is said so in `log`, and its source model is loaded
// instead, when it is still the file the prepared model was made from
// (same fingerprint, or an unchanged stat: SourceUnchangedByStat);
// otherwise the session is not created, with both reasons
// (docs/design.md decision 44). With the config's
// prepared_model_cache_dir set, a model file's prepared model is looked for
// there first (PreparedModelCachePath) and used under the same key, when
// its source is still the file it was prepared from; else the model file
// is loaded and the session writes the cache after the passes
// (WritePreparedModelCache; decision 49).
//
//   ProviderSet providers = ProvidersForMachine(config);
//   ASSIGN_OR_RETURN(SessionModel m, LoadSessionModel("resnet50.sluicemodel",
//                                                     config, providers));
//   if (!m.prepared) { /* run OptimizeGraph on m.graph */ }
//
// Stateless functions; thread-safe.
#ifndef SLUICE_EXECUTOR_SESSION_MODEL_H_
#define SLUICE_EXECUTOR_SESSION_MODEL_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "kernels/providers.h"
#include "model/prepared_model.h"
#include "onnx/importer.h"
#include "optimizer/pipeline.h"
#include "proto/config.pb.h"

namespace sluice {

// The key a prepared model must have for a session of `config` (with
// environment overrides applied) on `providers`, one part per input of the
// passes: the file format and sluice's build ID; the optimisation level,
// precision, resolved convolution layout and the target's other choices;
// the resource limits folding obeys; the provider the optimizer targets
// and the version of every library each provider loads (oneDNN, cuDNN).
std::vector<PreparedKeyPart> PreparedModelKey(const RuntimeConfig& config,
                                              const ProviderSet& providers);

struct SessionModel {
  std::unique_ptr<const Graph> graph;
  // true: `graph` is a prepared model's, already optimised at `level`.
  bool prepared = false;
  OptimizationLevel level = OPTIMIZATION_NONE;
  std::vector<std::string> removed_nodes;  // prepared: what the passes removed
  // Lines for the session's log: the prepared model used, or why it was
  // refused and what was loaded instead.
  std::vector<std::string> log;
  // Not empty: the prepared-model cache file to write once the passes ran
  // on `graph` (WritePreparedModelCache), and its header's source and key.
  std::string cache_path;
  PreparedModelHeader cache_header;
};

// What stat(2) says of `path` now (size, mtime, ctime, inode, device) and
// the time it was asked (CLOCK_REALTIME). NOT_FOUND when it cannot be.
absl::StatusOr<PreparedFileStat> StatSourceFile(const std::string& path);

// How long before a stat a file's last change must lie for the stat to be
// trusted: a change within a clock tick (or a second, on filesystems that
// keep seconds) of the stat could be followed by another with the same
// times.
inline constexpr int64_t kRacyStatMarginNs = 2'000'000'000;

// Whether `path` is, by its stat alone, the file `recorded` describes: the
// same size, mtime, ctime, inode and device, and recorded times older than
// `racy_margin_ns` before `recorded` was taken. false: unknown, read it
// (also when nothing was recorded). Writing a file's bytes changes its
// ctime, which no call can set back, so an unchanged stat means unchanged
// bytes (as git's index and make assume, with git's "racy" rule).
bool SourceUnchangedByStat(const std::string& path,
                           const PreparedFileStat& recorded,
                           int64_t racy_margin_ns = kRacyStatMarginNs);

// The file in config.prepared_model_cache_dir() that holds the prepared
// model of the model file `source_path`: DIR/<file name>-<16 hex digits of
// the fingerprint of its absolute path>.sluicemodel, so that two models of
// one name in different folders do not share one. "" when the field is
// empty.
std::string PreparedModelCachePath(const std::string& source_path,
                                   const RuntimeConfig& config);

// Loads `path` for a session of `config` on `providers` (see above). A
// model file's errors are LoadModelGraph's; a refused prepared model whose
// source is gone or changed is FAILED_PRECONDITION naming both.
absl::StatusOr<SessionModel> LoadSessionModel(const std::string& path,
                                              const RuntimeConfig& config,
                                              const ProviderSet& providers);

// The header `sluice convert --optimized` writes, first part: the source
// (`source_path` as imported with `onnx_options`; `loaded`, the graph
// loaded from it before the passes, says which external weights files it
// read, recorded with their fingerprints) and `key` (PreparedModelKey's).
// Errors: a source or weights file that cannot be read.
absl::StatusOr<PreparedModelHeader> PreparedSourceHeader(
    const std::string& source_path, const OnnxImportOptions& onnx_options,
    const Graph& loaded, std::vector<PreparedKeyPart> key);

// Writes the prepared model of `graph` (the passes' result, recorded in
// model.cache_header by RecordOptimization) to model.cache_path, creating
// its folder. Returns the log line: what was written, or why it could not
// be (a cache that cannot be written is not an error).
std::string WritePreparedModelCache(const Graph& graph,
                                    const SessionModel& model);

// Second part: what the passes did (`opt`: OptimizeGraph's result on that
// graph): the level, the removed nodes and each pass's record.
void RecordOptimization(const OptimizedGraph& opt, PreparedModelHeader* header);

}  // namespace sluice

#endif  // SLUICE_EXECUTOR_SESSION_MODEL_H_
