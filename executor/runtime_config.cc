// Loading, validating and overriding RuntimeConfig (see runtime_config.h).
#include "executor/runtime_config.h"

#include <tuple>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "device/device.h"
#include "device/gpu_device.h"
#include "executor/config_fields.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"

namespace sluice {
namespace {

constexpr int kMaxThreads = 4096;

// Keeps the first error the text parser reports, with its position.
class FirstErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (has_error_) return;
    has_error_ = true;
    line_ = line;
    column_ = column;
    message_ = message;
  }
  void AddWarning(int, google::protobuf::io::ColumnNumber,
                  const std::string&) override {}

  bool has_error() const { return has_error_; }
  // "SOURCE:LINE:COLUMN: message", counting from 1, the column as it was
  // before short enum names were expanded.
  std::string Format(absl::string_view source,
                     const ExpandedText& expanded) const {
    return absl::StrCat(source, ":", line_ + 1, ":",
                        expanded.OriginalColumn(line_, column_) + 1, ": ",
                        message_);
  }

 private:
  bool has_error_ = false;
  int line_ = 0;
  int column_ = 0;
  std::string message_;
};

absl::Status Invalid(absl::string_view field, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", why));
}

// Checks one MemoryLimit. `required`: it must be set; `allow_zero`: 0 bytes
// is accepted (meaning no budget).
absl::Status CheckMemoryLimit(const MemoryLimit& limit, absl::string_view field,
                              bool required, bool allow_zero) {
  switch (limit.limit_case()) {
    case MemoryLimit::LIMIT_NOT_SET:
      if (required) {
        return Invalid(field, "is required (set bytes or fraction)");
      }
      return absl::OkStatus();
    case MemoryLimit::kBytes:
      if (limit.bytes() < 0) {
        return Invalid(field, absl::StrCat("bytes must not be negative, got ",
                                           limit.bytes()));
      }
      if (limit.bytes() == 0 && !allow_zero) {
        return Invalid(field,
                       "bytes must be > 0 (leave the limit out to use the "
                       "whole device)");
      }
      return absl::OkStatus();
    case MemoryLimit::kFraction: {
      const double f = limit.fraction();
      if (!(f > 0.0 && f <= 1.0)) {  // also rejects NaN
        return Invalid(field, absl::StrCat("fraction must be in (0, 1], got ",
                                           f));
      }
      return absl::OkStatus();
    }
  }
  return Invalid(field, "unknown kind of limit");
}

absl::Status CheckLogicalGpus(const GpuConfig& gpu, const RuntimeConfig& config,
                              absl::string_view prefix) {
  int64_t bytes_sum = 0;
  double fraction_sum = 0;
  bool any_bytes = false;
  bool any_fraction = false;
  for (int j = 0; j < gpu.logical_devices_size(); ++j) {
    const MemoryLimit& limit = gpu.logical_devices(j).memory_limit();
    std::string field =
        absl::StrCat(prefix, ".logical_devices[", j, "].memory_limit");
    RETURN_IF_ERROR(CheckMemoryLimit(limit, field, /*required=*/true,
                                     /*allow_zero=*/false));
    if (limit.has_bytes()) {
      any_bytes = true;
      if (bytes_sum > std::numeric_limits<int64_t>::max() - limit.bytes()) {
        return Invalid(field, "the logical devices' bytes overflow int64");
      }
      bytes_sum += limit.bytes();
    } else {
      any_fraction = true;
      fraction_sum += limit.fraction();
    }
  }
  if (any_fraction && fraction_sum > 1.0 + 1e-9) {
    return Invalid(absl::StrCat(prefix, ".logical_devices"),
                   absl::StrFormat("fractions add up to %g, more than the "
                                   "whole card",
                                   fraction_sum));
  }
  const MemoryLimit parent = EffectiveGpuMemoryLimit(config, gpu.index());
  if (any_bytes && parent.has_bytes() && bytes_sum > parent.bytes()) {
    return Invalid(absl::StrCat(prefix, ".logical_devices"),
                   absl::StrCat("limits add up to ", FormatBytes(bytes_sum),
                                ", more than GPU ", gpu.index(),
                                "'s memory limit of ",
                                FormatBytes(parent.bytes())));
  }
  return absl::OkStatus();
}

absl::Status CheckGpus(const RuntimeConfig& config) {
  std::set<int> visible;
  for (int i = 0; i < config.visible_gpus_size(); ++i) {
    const int index = config.visible_gpus(i);
    std::string field = absl::StrCat("visible_gpus[", i, "]");
    if (index < 0) {
      return Invalid(field, absl::StrCat("GPU index must be >= 0, got ", index));
    }
    if (!visible.insert(index).second) {
      return Invalid(field, absl::StrCat("GPU ", index, " is listed twice"));
    }
  }
  if (config.has_use_gpu() && !config.use_gpu() && !visible.empty()) {
    return Invalid("visible_gpus",
                   "lists GPUs but use_gpu is false; remove one of the two");
  }
  RETURN_IF_ERROR(CheckMemoryLimit(config.gpu_memory_limit(),
                                   "gpu_memory_limit", /*required=*/false,
                                   /*allow_zero=*/false));
  std::map<int, int> seen;  // GPU index -> position in `gpu`
  for (int i = 0; i < config.gpu_size(); ++i) {
    const GpuConfig& gpu = config.gpu(i);
    const std::string prefix = absl::StrCat("gpu[", i, "]");
    if (gpu.index() < 0) {
      return Invalid(absl::StrCat(prefix, ".index"),
                     absl::StrCat("GPU index must be >= 0, got ", gpu.index()));
    }
    auto [it, inserted] = seen.emplace(gpu.index(), i);
    if (!inserted) {
      return Invalid(absl::StrCat(prefix, ".index"),
                     absl::StrCat("GPU ", gpu.index(),
                                  " is configured twice (also gpu[", it->second,
                                  "])"));
    }
    if (!visible.empty() && visible.count(gpu.index()) == 0) {
      return Invalid(absl::StrCat(prefix, ".index"),
                     absl::StrCat("GPU ", gpu.index(),
                                  " is not in visible_gpus [",
                                  absl::StrJoin(visible, ", "), "]"));
    }
    RETURN_IF_ERROR(CheckMemoryLimit(gpu.memory_limit(),
                                     absl::StrCat(prefix, ".memory_limit"),
                                     /*required=*/false,
                                     /*allow_zero=*/false));
    RETURN_IF_ERROR(CheckLogicalGpus(gpu, config, prefix));
  }
  return absl::OkStatus();
}

absl::Status CheckThreads(int32_t value, absl::string_view field) {
  if (value < 0 || value > kMaxThreads) {
    return Invalid(field, absl::StrCat("must be in [0, ", kMaxThreads,
                                       "] (0: one per core), got ", value));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<RuntimeConfig> ParseRuntimeConfig(absl::string_view text,
                                                 absl::string_view source_name) {
  google::protobuf::TextFormat::Parser parser;
  FirstErrorCollector errors;
  parser.RecordErrorsTo(&errors);
  RuntimeConfig config;
  // Enum values by their short names (optimization_level: NONE) become the
  // full names the text parser knows.
  ASSIGN_OR_RETURN(
      const ExpandedText expanded,
      ExpandShortEnumNames(text, source_name, *RuntimeConfig::descriptor()));
  if (!parser.ParseFromString(expanded.text, &config)) {
    if (errors.has_error()) {
      return absl::InvalidArgumentError(errors.Format(source_name, expanded));
    }
    return absl::InvalidArgumentError(
        absl::StrCat(source_name, ": not a valid RuntimeConfig text proto"));
  }
  return config;
}

absl::StatusOr<RuntimeConfig> LoadRuntimeConfig(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("cannot open runtime config '", path, "'"));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    return absl::DataLossError(
        absl::StrCat("error reading runtime config '", path, "'"));
  }
  return ParseRuntimeConfig(text.str(), path);
}

absl::Status ValidateRuntimeConfig(const RuntimeConfig& config) {
  RETURN_IF_ERROR(CheckGpus(config));
  for (int i = 0; i < config.logical_cpus_size(); ++i) {
    RETURN_IF_ERROR(CheckMemoryLimit(
        config.logical_cpus(i).memory_limit(),
        absl::StrCat("logical_cpus[", i, "].memory_limit"),
        /*required=*/false, /*allow_zero=*/true));
  }
  for (const auto& [value, field] :
       {std::pair{config.cluster().join_timeout_seconds(),
                  "cluster.join_timeout_seconds"},
        std::pair{config.cluster().step_timeout_seconds(),
                  "cluster.step_timeout_seconds"}}) {
    if (!(value >= 0) || value > 1e7) {
      return Invalid(field, absl::StrCat("must be 0 (the default) or a number "
                                         "of seconds up to 1e7, got ",
                                         value));
    }
  }
  // Every enum field holds a value its enum declares (proto3 enums keep
  // unknown numbers from the binary format or from Python).
  RETURN_IF_ERROR(CheckEnumFields(config));
  if (!config.default_device().empty()) {
    absl::StatusOr<DeviceName> name = ParseDeviceName(config.default_device());
    if (!name.ok()) return Invalid("default_device", name.status().message());
    if (name->index < 0) {
      return Invalid("default_device",
                     absl::StrCat("must name one device such as \"/gpu:0\", "
                                  "got '",
                                  config.default_device(), "'"));
    }
    if (name->type == DeviceType::kGpu && config.has_use_gpu() &&
        !config.use_gpu()) {
      return Invalid("default_device",
                     absl::StrCat("is '", config.default_device(),
                                  "' but use_gpu is false"));
    }
  }
  RETURN_IF_ERROR(CheckThreads(config.inter_op_threads(), "inter_op_threads"));
  RETURN_IF_ERROR(CheckThreads(config.intra_op_threads(), "intra_op_threads"));
  if (config.plan_cache_max_plans() < 0) {
    return Invalid("plan_cache_max_plans",
                   absl::StrCat("must be 0 (the default, ", kDefaultPlanCachePlans,
                                ") or positive, got ",
                                config.plan_cache_max_plans()));
  }
  if (config.plan_cache_max_bytes() < 0) {
    return Invalid("plan_cache_max_bytes",
                   absl::StrCat("must be 0 (no byte bound) or positive, got ",
                                config.plan_cache_max_bytes()));
  }
  const ResourceLimitsConfig& limits = config.resource_limits();
  const ResourceLimits defaults;
  for (auto [name, value, fallback] :
       {std::tuple{"resource_limits.max_created_tensor_bytes",
                   limits.max_created_tensor_bytes(),
                   defaults.max_created_tensor_bytes},
        std::tuple{"resource_limits.max_folded_constant_bytes",
                   limits.max_folded_constant_bytes(),
                   defaults.max_folded_constant_bytes},
        std::tuple{"resource_limits.max_folded_bytes",
                   limits.max_folded_bytes(), defaults.max_folded_bytes},
        std::tuple{"max_folded_constant_bytes",
                   config.max_folded_constant_bytes(),
                   defaults.max_folded_constant_bytes},
        std::tuple{"resource_limits.max_import_folded_bytes",
                   limits.max_import_folded_bytes(),
                   defaults.max_folded_bytes}}) {
    if (value < 0) {
      return Invalid(name, absl::StrCat("must be 0 (the default, ",
                                        FormatBytes(fallback),
                                        ") or a positive byte count, got ",
                                        value));
    }
  }
  // A deprecated field and the one that replaced it, both set.
  for (auto [old_name, old_value, new_name, new_value] :
       {std::tuple{"max_folded_constant_bytes",
                   config.max_folded_constant_bytes(),
                   "resource_limits.max_folded_constant_bytes",
                   limits.max_folded_constant_bytes()},
        std::tuple{"resource_limits.max_import_folded_bytes",
                   limits.max_import_folded_bytes(),
                   "resource_limits.max_folded_bytes",
                   limits.max_folded_bytes()}}) {
    if (old_value > 0 && new_value > 0) {
      return Invalid(old_name,
                     absl::StrCat("is deprecated and replaced by ", new_name,
                                  ", which is also set; keep only ",
                                  new_name));
    }
  }
  return absl::OkStatus();
}

namespace {

// Singular fields of `overlay` into `base`: scalars replace, messages merge
// field by field (recursively), repeated fields replace when set.
void MergeFields(const google::protobuf::Message& overlay,
                 google::protobuf::Message* base) {
  namespace pb = google::protobuf;
  const pb::Reflection& from = *overlay.GetReflection();
  const pb::Reflection& to = *base->GetReflection();
  std::vector<const pb::FieldDescriptor*> fields;
  from.ListFields(overlay, &fields);
  for (const pb::FieldDescriptor* field : fields) {
    if (field->is_repeated()) {
      to.ClearField(base, field);
      for (int i = 0; i < from.FieldSize(overlay, field); ++i) {
        if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
          to.AddMessage(base, field)->CopyFrom(
              from.GetRepeatedMessage(overlay, field, i));
        }
      }
      if (field->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE) {
        // Scalars: copy the one field through a scratch message.
        std::unique_ptr<pb::Message> scratch(overlay.New());
        scratch->CopyFrom(overlay);
        std::vector<const pb::FieldDescriptor*> one = {field};
        to.SwapFields(base, scratch.get(), one);
      }
    } else if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
      MergeFields(from.GetMessage(overlay, field),
                  to.MutableMessage(base, field));
    } else {
      std::unique_ptr<pb::Message> scratch(overlay.New());
      scratch->CopyFrom(overlay);
      std::vector<const pb::FieldDescriptor*> one = {field};
      to.SwapFields(base, scratch.get(), one);
    }
  }
}

}  // namespace

RuntimeConfig MergeRuntimeConfig(const RuntimeConfig& base,
                                 const RuntimeConfig& overlay) {
  RuntimeConfig merged = base;
  RuntimeConfig rest = overlay;
  rest.clear_gpu();
  MergeFields(rest, &merged);
  for (const GpuConfig& gpu : overlay.gpu()) {
    GpuConfig* target = nullptr;
    for (GpuConfig& existing : *merged.mutable_gpu()) {
      if (existing.index() == gpu.index()) target = &existing;
    }
    if (target == nullptr) {
      *merged.add_gpu() = gpu;
      continue;
    }
    if (gpu.has_memory_limit()) *target->mutable_memory_limit() = gpu.memory_limit();
    if (gpu.logical_devices_size() > 0) {
      *target->mutable_logical_devices() = gpu.logical_devices();
    }
  }
  return merged;
}

void NoteDeprecatedFields(const RuntimeConfig& config,
                          std::vector<std::string>* log) {
  if (log == nullptr) return;
  if (config.max_folded_constant_bytes() > 0) {
    log->push_back(
        "config: max_folded_constant_bytes is deprecated; read as "
        "resource_limits.max_folded_constant_bytes, which also bounds the "
        "ONNX importer's folding (move it there)");
  }
  if (config.resource_limits().max_import_folded_bytes() > 0) {
    log->push_back(
        "config: resource_limits.max_import_folded_bytes is deprecated; read "
        "as resource_limits.max_folded_bytes, which also bounds the "
        "optimizer's constant folding (rename it)");
  }
}

absl::Status ApplyEnvironmentOverrides(RuntimeConfig* config,
                                       std::vector<std::string>* log) {
  return ApplyEnvironmentOverrides(
      config, log, [](const char* name) -> std::optional<std::string> {
        const char* value = std::getenv(name);
        if (value == nullptr) return std::nullopt;
        return std::string(value);
      });
}

absl::Status ApplyEnvironmentOverrides(RuntimeConfig* config,
                                       std::vector<std::string>* log,
                                       const EnvLookup& getenv) {
  // The variables that set one field each, read as the field's value is
  // written on the command line (SetFieldFromText: true|false, an enum's
  // short or full name, a number). `unset` says what the config means when
  // it leaves the field out.
  struct FieldOverride {
    const char* variable;
    const char* field;
    const char* unset;
  };
  static constexpr FieldOverride kFieldOverrides[] = {
      {kEnvGpuAllowGrowth, "allow_growth", "unset (default true)"},
      {kEnvGpuGraphs, "gpu_graphs", "true"},
      {kEnvUseCudnn, "use_cudnn", kUseCudnnByDefault ? "true" : "false"},
  };
  // Parse everything first, into a copy, so that an error leaves `config`
  // unchanged.
  RuntimeConfig next = *config;
  std::vector<std::string> lines;
  const google::protobuf::Descriptor& type = *RuntimeConfig::descriptor();
  const google::protobuf::Reflection& reflection = *next.GetReflection();
  for (const FieldOverride& o : kFieldOverrides) {
    std::optional<std::string> v = getenv(o.variable);
    if (!v.has_value()) continue;
    absl::Status set = SetFieldFromText(&next, o.field, *v);
    if (!set.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(o.variable, ": ", set.message()));
    }
    const google::protobuf::FieldDescriptor* field =
        type.FindFieldByName(o.field);
    std::string before = o.unset;
    std::string after;
    if (reflection.HasField(*config, field)) {
      google::protobuf::TextFormat::PrintFieldValueToString(*config, field, -1,
                                                            &before);
    }
    google::protobuf::TextFormat::PrintFieldValueToString(next, field, -1,
                                                          &after);
    lines.push_back(absl::StrCat(o.variable, " sets ", o.field, " to ", after,
                                 " (config: ", before, ")"));
  }
  std::optional<MemoryLimit> limit;
  if (std::optional<std::string> v = getenv(kEnvGpuMemoryLimit)) {
    absl::StatusOr<MemoryLimit> parsed = ParseMemoryLimit(*v);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          kEnvGpuMemoryLimit, "='", *v, "': ", parsed.status().message()));
    }
    limit = *parsed;
  }
  *config = std::move(next);
  if (limit.has_value()) {
    lines.push_back(absl::StrCat(
        kEnvGpuMemoryLimit, " sets gpu_memory_limit to ",
        DescribeMemoryLimit(*limit), " (config: ",
        DescribeMemoryLimit(config->gpu_memory_limit()), ")"));
    *config->mutable_gpu_memory_limit() = *limit;
    for (GpuConfig& gpu : *config->mutable_gpu()) {
      if (gpu.memory_limit().limit_case() == MemoryLimit::LIMIT_NOT_SET) {
        continue;
      }
      lines.push_back(absl::StrCat(kEnvGpuMemoryLimit, " replaces GPU ",
                                   gpu.index(), "'s memory_limit of ",
                                   DescribeMemoryLimit(gpu.memory_limit())));
      gpu.clear_memory_limit();
    }
  }
  if (log != nullptr) {
    for (std::string& line : lines) log->push_back(std::move(line));
  }
  return absl::OkStatus();
}


absl::StatusOr<MemoryLimit> ParseMemoryLimit(absl::string_view text) {
  const absl::string_view stripped = absl::StripAsciiWhitespace(text);
  absl::string_view number, unit;
  MemoryLimit limit;
  if (SplitNumberAndUnit(stripped, &number, &unit) && unit.empty() &&
      number.find('.') != absl::string_view::npos) {
    double fraction = 0;
    if (!absl::SimpleAtod(number, &fraction) ||
        !(fraction > 0.0 && fraction <= 1.0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a fraction of the card must be in (0, 1], got '", stripped,
          "' (for bytes write e.g. 4GiB)"));
    }
    limit.set_fraction(fraction);
    return limit;
  }
  ASSIGN_OR_RETURN(int64_t bytes, ParseByteSize(stripped));
  if (bytes <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("a memory limit must be > 0 bytes, got '", stripped, "'"));
  }
  limit.set_bytes(bytes);
  return limit;
}


std::string DescribeMemoryLimit(const MemoryLimit& limit) {
  switch (limit.limit_case()) {
    case MemoryLimit::kBytes:
      return FormatBytes(limit.bytes());
    case MemoryLimit::kFraction:
      return absl::StrFormat("%g%% of the card", limit.fraction() * 100.0);
    case MemoryLimit::LIMIT_NOT_SET:
      break;
  }
  return "none";
}

MemoryLimit EffectiveGpuMemoryLimit(const RuntimeConfig& config,
                                    int gpu_index) {
  for (const GpuConfig& gpu : config.gpu()) {
    if (gpu.index() == gpu_index &&
        gpu.memory_limit().limit_case() != MemoryLimit::LIMIT_NOT_SET) {
      return gpu.memory_limit();
    }
  }
  return config.gpu_memory_limit();
}

int64_t ResolveMemoryLimit(const MemoryLimit& limit, int64_t total_bytes) {
  int64_t bytes = total_bytes;
  if (limit.has_bytes()) {
    bytes = limit.bytes();
  } else if (limit.has_fraction()) {
    bytes = static_cast<int64_t>(
        std::floor(limit.fraction() * static_cast<double>(total_bytes)));
  }
  if (total_bytes > 0 && bytes > total_bytes) bytes = total_bytes;
  return bytes;
}

}  // namespace sluice
