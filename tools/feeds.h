// Sessions and feeds for a command's step: values from --input NAME=FILE.npy, and random
// values (--random-inputs) for the inputs not given. Shared by `sluice run`
// and `sluice bench`.
//
//   Feeds feeds;
//   RETURN_IF_ERROR(MakeFeeds(graph, {"x=x.npy"}, /*random_inputs=*/true,
//                             /*seed=*/0, &feeds, &notes));
//
// Random inputs: floats uniform in [-1, 1), integers uniform in [0, 10),
// bools fair coin flips, from a seeded generator whose sequence is the same
// on every platform; unknown dimensions become 1 (with a note). Stateless;
// thread-safe.
#ifndef SLUICE_TOOLS_FEEDS_H_
#define SLUICE_TOOLS_FEEDS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "core/resource_limits.h"
#include "executor/session.h"
#include "graph/graph.h"
#include "tools/config_flags.h"

namespace sluice {

// Errors name the flag, the input or the file. A random input larger than
// limits.max_created_tensor_bytes is RESOURCE_EXHAUSTED, before anything is
// allocated.
absl::Status MakeFeeds(const Graph& graph,
                       const std::vector<std::string>& input_specs,
                       bool random_inputs, uint64_t seed, Feeds* feeds,
                       std::vector<std::string>* notes,
                       const ResourceLimits& limits = {});

// The session a command runs: the config LoadConfigWithFlags makes of
// `config` (the file, the environment, then the flags:
// tools/config_flags.h), then the model, an ONNX one imported with `dims`
// ("NAME=N" values of its symbolic dimensions, as --dim gives them;
// INVALID_ARGUMENT naming the flag for a malformed one or a name no input
// uses). The config's and the session's notes are appended to `notes`, each
// line once. `create` as Session::Create takes it (a progress line).
absl::StatusOr<std::unique_ptr<Session>> OpenSession(
    const std::string& model_path, const ConfigFlagValues& config,
    const std::vector<std::string>& dims, std::vector<std::string>* notes,
    const CreateOptions& create = {});

// INVALID_ARGUMENT naming the flag and the value unless `flag` is NAME=N
// with N an integer from 0 to 2^31-1.
absl::Status CheckDimFlag(const std::string& flag);

// Adds --dim NAME=N (repeatable) to a command, filling `dims`.
void AddDimOption(CLI::App* app, std::vector<std::string>* dims);

// A failed step's status, with a hint to give the inputs when some were left
// out and the step failed on its feeds.
absl::Status WithFeedHint(const absl::Status& status, const Graph& graph,
                          const Feeds& feeds, bool random_inputs);

}  // namespace sluice

#endif  // SLUICE_TOOLS_FEEDS_H_
