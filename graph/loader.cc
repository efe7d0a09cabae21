// Reading and writing GraphDef files. A binary file is parsed by protobuf
// from the file in pieces, a text one read whole first (its size comes from
// the filesystem, never from its content); protobuf bounds every length by
// the bytes present.
#include "graph/loader.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/escape.h"
#include "core/status_macros.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/io/zero_copy_stream_impl.h"
#include "google/protobuf/stubs/logging.h"
#include "google/protobuf/text_format.h"

namespace sluice {
namespace {

// Files above protobuf's 2 GiB message limit cannot be GraphDefs; weights
// that large belong in external data.
constexpr uintmax_t kMaxModelFileBytes = std::numeric_limits<int>::max();

enum class Format { kBinary, kText, kUnknown };

Format FormatOf(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".pb") return Format::kBinary;
  if (ext == ".pbtxt" || ext == ".txt") return Format::kText;
  return Format::kUnknown;
}

// Checks that `path` is a regular file within kMaxModelFileBytes; its size.
absl::StatusOr<uintmax_t> CheckModelFile(const std::string& path) {
  std::error_code ec;
  std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) {
    return absl::NotFoundError(absl::StrCat("model file ", path,
                                            " not found"));
  }
  if (!std::filesystem::is_regular_file(st)) {
    return absl::InvalidArgumentError(
        absl::StrCat("model file ", path, " is not a regular file"));
  }
  uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) {
    return absl::NotFoundError(
        absl::StrCat("cannot stat ", path, ": ", ec.message()));
  }
  if (size > kMaxModelFileBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model file ", path, " is ", size,
        " bytes; GraphDef files are limited to 2 GiB (store weights as "
        "external data)"));
  }
  return size;
}

absl::Status OpenError(const std::string& path, int err) {
  if (err == EACCES) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot read ", path, ": permission denied"));
  }
  return absl::NotFoundError(
      absl::StrCat("cannot open ", path, ": ", std::strerror(err)));
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  ASSIGN_OR_RETURN(uintmax_t size, CheckModelFile(path));
  std::ifstream in(path, std::ios::binary);
  if (!in) return OpenError(path, errno);
  std::string data(static_cast<size_t>(size), '\0');
  if (size > 0) in.read(data.data(), static_cast<std::streamsize>(size));
  if (!in || in.gcount() != static_cast<std::streamsize>(size)) {
    return absl::DataLossError(absl::StrCat("short read from ", path));
  }
  return data;
}

// Collects text-format errors as "line L:C: message" (1-based).
class ErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    errors_.push_back(
        absl::StrCat("line ", line + 1, ":", column + 1, ": ", message));
  }
  void AddWarning(int line, google::protobuf::io::ColumnNumber column,
                  const std::string& message) override {}
  const std::vector<std::string>& errors() const { return errors_; }

 private:
  std::vector<std::string> errors_;
};

// The first string field (not bytes) anywhere in `m` that is not UTF-8,
// as "NodeDef.name 'fc1/w\xff'"; "" when all are.
std::string FirstNonUtf8String(const google::protobuf::Message& m) {
  const google::protobuf::Reflection* r = m.GetReflection();
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  r->ListFields(m, &fields);
  using FD = google::protobuf::FieldDescriptor;
  for (const FD* f : fields) {
    if (f->type() == FD::TYPE_STRING) {
      const int n = f->is_repeated() ? r->FieldSize(m, f) : 1;
      for (int i = 0; i < n; ++i) {
        std::string scratch;
        const std::string& v =
            f->is_repeated() ? r->GetRepeatedStringReference(m, f, i, &scratch)
                             : r->GetStringReference(m, f, &scratch);
        if (!IsValidUtf8(v)) {
          return absl::StrCat(m.GetDescriptor()->name(), ".", f->name(), " '",
                              EscapeForTerminal(v, 200), "'");
        }
      }
    } else if (f->cpp_type() == FD::CPPTYPE_MESSAGE) {
      if (f->is_map()) {  // map keys are strings too: walk the entries
        for (int i = 0; i < r->FieldSize(m, f); ++i) {
          std::string bad = FirstNonUtf8String(r->GetRepeatedMessage(m, f, i));
          if (!bad.empty()) return bad;
        }
        continue;
      }
      const int n = f->is_repeated() ? r->FieldSize(m, f) : 1;
      for (int i = 0; i < n; ++i) {
        std::string bad = FirstNonUtf8String(
            f->is_repeated() ? r->GetRepeatedMessage(m, f, i)
                             : r->GetMessage(m, f));
        if (!bad.empty()) return bad;
      }
    }
  }
  return "";
}

}  // namespace

absl::Status CheckGraphDefUtf8(const GraphDef& def, const std::string& path) {
  std::string bad = FirstNonUtf8String(def);
  if (bad.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      path, ": ", bad,
      " is not valid UTF-8; names and strings in a GraphDef must be UTF-8"));
}

namespace {

absl::Status ParseBinary(const std::string& data, const std::string& path,
                         GraphDef* def) {
  // A string field that is not UTF-8 fails the parse; protobuf would also
  // log a line of its own to stderr.
  google::protobuf::LogSilencer quiet;
  if (!def->ParseFromString(data)) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": not a valid binary GraphDef (truncated or corrupt)"));
  }
  return absl::OkStatus();
}

// ParseBinary from the file itself, read in pieces: the file's bytes are
// never held whole beside the parsed GraphDef (whose Const values are most
// of a model's size).
absl::Status ParseBinaryFile(const std::string& path, GraphDef* def) {
  RETURN_IF_ERROR(CheckModelFile(path).status());
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return OpenError(path, errno);
  google::protobuf::io::FileInputStream stream(fd);
  stream.SetCloseOnDelete(true);
  google::protobuf::LogSilencer quiet;
  if (!def->ParseFromZeroCopyStream(&stream)) {
    if (stream.GetErrno() != 0) {
      return absl::DataLossError(absl::StrCat(
          "cannot read ", path, ": ", std::strerror(stream.GetErrno())));
    }
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": not a valid binary GraphDef (truncated or corrupt)"));
  }
  return absl::OkStatus();
}

absl::Status ParseText(const std::string& data, const std::string& path,
                       GraphDef* def, GraphSource* source) {
  google::protobuf::TextFormat::Parser parser;
  ErrorCollector errors;
  google::protobuf::TextFormat::ParseInfoTree tree;
  parser.RecordErrorsTo(&errors);
  parser.WriteLocationsTo(&tree);
  if (!parser.ParseFromString(data, def)) {
    std::string msg = errors.errors().empty()
                          ? std::string("malformed text GraphDef")
                          : absl::StrJoin(errors.errors(), "\n");
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", msg));
  }
  RETURN_IF_ERROR(CheckGraphDefUtf8(*def, path));
  const google::protobuf::FieldDescriptor* node_field =
      GraphDef::descriptor()->FindFieldByName("node");
  source->node_lines_by_index.assign(def->node_size(), 0);
  for (int i = 0; i < def->node_size(); ++i) {
    google::protobuf::TextFormat::ParseLocation loc =
        tree.GetLocation(node_field, i);
    int line = loc.line >= 0 ? loc.line + 1 : 0;
    source->node_lines_by_index[i] = line;
    source->node_lines.emplace(def->node(i).name(), line);  // first wins
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LoadedGraphDef> LoadGraphDef(const std::string& path) {
  LoadedGraphDef loaded;
  loaded.source.path = path;
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  loaded.source.base_dir = dir.empty() ? "." : dir.string();
  const Format format = FormatOf(path);
  if (format == Format::kBinary) {
    RETURN_IF_ERROR(ParseBinaryFile(path, &loaded.def));
    return loaded;
  }
  ASSIGN_OR_RETURN(std::string data, ReadFile(path));
  if (format == Format::kText) {
    RETURN_IF_ERROR(ParseText(data, path, &loaded.def, &loaded.source));
    return loaded;
  }
  // Unknown extension: binary if it parses as binary, else text.
  if (ParseBinary(data, path, &loaded.def).ok()) return loaded;
  loaded.def.Clear();
  absl::Status text = ParseText(data, path, &loaded.def, &loaded.source);
  if (!text.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": neither a binary nor a text GraphDef (as text: ",
        text.message(), ")"));
  }
  return loaded;
}

absl::StatusOr<std::unique_ptr<const Graph>> LoadGraph(
    const std::string& path) {
  ASSIGN_OR_RETURN(LoadedGraphDef loaded, LoadGraphDef(path));
  absl::StatusOr<std::unique_ptr<const Graph>> graph =
      BuildGraph(loaded.def, loaded.source);
  if (!graph.ok()) {
    return absl::Status(graph.status().code(),
                        absl::StrCat(path, ":\n", graph.status().message()));
  }
  return graph;
}

absl::Status SaveGraphDef(const GraphDef& def, const std::string& path) {
  std::string data;
  if (FormatOf(path) == Format::kText) {
    if (!google::protobuf::TextFormat::PrintToString(def, &data)) {
      return absl::InternalError("cannot print the GraphDef as text");
    }
  } else if (!def.SerializeToString(&data)) {
    return absl::InvalidArgumentError(
        "cannot serialize the GraphDef (over 2 GiB?)");
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
  }
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  out.close();
  if (!out) return absl::DataLossError(absl::StrCat("short write to ", path));
  return absl::OkStatus();
}

}  // namespace sluice
