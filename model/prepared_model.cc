// The prepared model file (model/prepared_model.h). Layout:
//   [0, 8)    magic "SLUICEPM"
//   [8, 12)   format version, little-endian uint32
//   [12, 16)  zero
//   [16, 24)  header bytes H, uint64
//   [24, 32)  Fingerprint64 of the header
//   [32, 40)  Fingerprint64 of the GraphDef, then of each constant's bytes
//             in the header's order, chained (each the seed of the next)
//   [40, 40 + H)            PreparedModelHeader
//   [40 + H, + graph_bytes) GraphDef
//   zeros to the next multiple of 4096, then weights_bytes of weights: the
//   file ends there.
// The chained body fingerprint lets the writer stream the weights from the
// graph's tensors (no second copy of them in memory) and the reader check
// exactly the bytes it uses.
#include "model/prepared_model.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/fingerprint.h"
#include "core/status_macros.h"
#include "core/tensor_proto.h"
#include "graph/attr_map.h"
#include "graph/builder.h"
#include "graph/loader.h"

namespace sluice {
namespace {

constexpr char kMagic[8] = {'S', 'L', 'U', 'I', 'C', 'E', 'P', 'M'};
constexpr size_t kPrefixBytes = 40;
constexpr int64_t kWeightsAlignment = 4096;
constexpr int64_t kConstAlignment = 64;
// protobuf parses at most 2 GiB at once: the header's and the GraphDef's
// sizes are checked against it before any arithmetic on them.
constexpr uint64_t kMaxSectionBytes = std::numeric_limits<int>::max();

int64_t RoundUp(int64_t n, int64_t to) { return (n + to - 1) / to * to; }

void PutU32(char* p, uint32_t v) { std::memcpy(p, &v, sizeof v); }
void PutU64(char* p, uint64_t v) { std::memcpy(p, &v, sizeof v); }
uint32_t GetU32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
uint64_t GetU64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// The memory of the constants of a mapped prepared model: views of one
// mapping, which the last of them unmaps (FileMapping), so Deallocate does
// nothing.
class PreparedFileAllocator final : public Allocator {
 public:
  std::string Name() const override { return "cpu (prepared model file)"; }
  bool host_accessible() const override { return true; }
  absl::StatusOr<void*> Allocate(size_t /*bytes*/) override {
    return absl::UnimplementedError(
        "a prepared model's memory is its file's mapping");
  }
  void Deallocate(void* /*ptr*/, size_t /*bytes*/) override {}
};

Allocator* PreparedAllocator() {
  static Allocator* const kAllocator = new PreparedFileAllocator();
  return kAllocator;
}

// A whole file mapped copy-on-write: constants are read in place, and a
// kernel that writes into one gets a private copy of the page.
class FileMapping {
 public:
  static absl::StatusOr<std::shared_ptr<FileMapping>> Map(
      const std::string& path) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
      const int err = errno;
      const std::string msg =
          absl::StrCat("cannot open ", path, ": ", std::strerror(err));
      return err == EACCES || err == EPERM ? absl::PermissionDeniedError(msg)
                                           : absl::NotFoundError(msg);
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      close(fd);
      return absl::NotFoundError(absl::StrCat(path, " is not a regular file"));
    }
    auto m = std::shared_ptr<FileMapping>(new FileMapping());
    m->size_ = static_cast<size_t>(st.st_size);
    if (m->size_ > 0) {
      void* base =
          mmap(nullptr, m->size_, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
      const int err = errno;
      if (base == MAP_FAILED) {
        close(fd);
        return absl::DataLossError(
            absl::StrCat("cannot map ", path, ": ", std::strerror(err)));
      }
      madvise(base, m->size_, MADV_WILLNEED);
      m->base_ = static_cast<char*>(base);
    }
    close(fd);
    return m;
  }
  ~FileMapping() {
    if (base_ != nullptr) munmap(base_, size_);
  }
  FileMapping(const FileMapping&) = delete;
  FileMapping& operator=(const FileMapping&) = delete;

  char* data() const { return base_; }
  size_t size() const { return size_; }

 private:
  FileMapping() = default;
  char* base_ = nullptr;
  size_t size_ = 0;
};

absl::Status Corrupt(const std::string& path, const std::string& what) {
  return absl::DataLossError(absl::StrCat("prepared model ", path, ": ", what));
}

// The prefix and header of a mapped file; `body_fingerprint` out. Without
// `check_version`, a header of another format version is read too: the
// prefix's first 32 bytes and the header's source fields keep their places
// in every version (proto/prepared_model.proto), so that a session can
// fall back from a file it refuses to that file's source.
absl::StatusOr<PreparedModelHeader> ParsePrefixAndHeader(
    const std::string& path, const char* data, size_t size, bool check_version,
    uint64_t* body_fingerprint) {
  if (size < sizeof kMagic || std::memcmp(data, kMagic, sizeof kMagic) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, " is not a prepared model (no SLUICEPM magic at its start)"));
  }
  if (size < kPrefixBytes) {
    return Corrupt(path, absl::StrCat("truncated: ", size,
                                      " bytes, shorter than its prefix"));
  }
  const uint32_t version = GetU32(data + 8);
  if (check_version && version != kPreparedModelFormatVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("prepared model ", path, " is in format ", version,
                     "; this sluice reads format ", kPreparedModelFormatVersion,
                     " (write it again with `sluice convert --optimized`)"));
  }
  const uint64_t header_bytes = GetU64(data + 16);
  if (header_bytes > kMaxSectionBytes) {
    return Corrupt(path, "its header size is not possible");
  }
  if (header_bytes > size - kPrefixBytes) {
    return Corrupt(path, absl::StrCat("truncated: ", size,
                                      " bytes, its header alone needs ",
                                      kPrefixBytes + header_bytes));
  }
  const char* header_data = data + kPrefixBytes;
  if (Fingerprint64(header_data, header_bytes) != GetU64(data + 24)) {
    return Corrupt(path, "its header does not match its fingerprint");
  }
  PreparedModelHeader header;
  if (!header.ParseFromArray(header_data, static_cast<int>(header_bytes))) {
    return Corrupt(path, "its header does not parse");
  }
  if (body_fingerprint != nullptr) *body_fingerprint = GetU64(data + 32);
  return header;
}

int64_t WeightsOffset(const PreparedModelHeader& header,
                      uint64_t header_bytes) {
  return RoundUp(
      static_cast<int64_t>(kPrefixBytes + header_bytes) + header.graph_bytes(),
      kWeightsAlignment);
}

absl::Status WriteAll(std::ofstream& out, const void* data, size_t bytes,
                      const std::string& path) {
  out.write(static_cast<const char*>(data),
            static_cast<std::streamsize>(bytes));
  if (!out) return absl::DataLossError(absl::StrCat("short write to ", path));
  return absl::OkStatus();
}

absl::Status WriteFile(const std::string& tmp, const std::string& prefix,
                       const std::string& header, const std::string& graph,
                       int64_t weights_offset,
                       const std::vector<const Tensor*>& values,
                       const PreparedModelHeader& h) {
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  if (!out) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot write ", tmp, ": ", std::strerror(errno)));
  }
  RETURN_IF_ERROR(WriteAll(out, prefix.data(), prefix.size(), tmp));
  RETURN_IF_ERROR(WriteAll(out, header.data(), header.size(), tmp));
  RETURN_IF_ERROR(WriteAll(out, graph.data(), graph.size(), tmp));
  int64_t at =
      static_cast<int64_t>(prefix.size() + header.size() + graph.size());
  const std::string zeros(kWeightsAlignment, '\0');
  auto pad_to = [&](int64_t to) -> absl::Status {
    while (at < to) {
      const size_t n =
          static_cast<size_t>(std::min<int64_t>(to - at, kWeightsAlignment));
      RETURN_IF_ERROR(WriteAll(out, zeros.data(), n, tmp));
      at += static_cast<int64_t>(n);
    }
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(pad_to(weights_offset));
  for (int i = 0; i < h.consts_size(); ++i) {
    RETURN_IF_ERROR(pad_to(weights_offset + h.consts(i).offset()));
    RETURN_IF_ERROR(
        WriteAll(out, values[i]->raw_data(), values[i]->bytes(), tmp));
    at += static_cast<int64_t>(values[i]->bytes());
  }
  RETURN_IF_ERROR(pad_to(weights_offset + h.weights_bytes()));
  out.close();
  if (!out) return absl::DataLossError(absl::StrCat("short write to ", tmp));
  return absl::OkStatus();
}

}  // namespace

bool IsPreparedModelFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[sizeof kMagic];
  if (!in.read(magic, sizeof magic)) return false;
  return std::memcmp(magic, kMagic, sizeof kMagic) == 0;
}

std::string DescribeKeyDifference(absl::Span<const PreparedKeyPart> file,
                                  absl::Span<const PreparedKeyPart> mine) {
  absl::flat_hash_map<std::string, const PreparedKeyPart*> theirs;
  for (const PreparedKeyPart& p : file) theirs[p.name()] = &p;
  std::vector<std::string> diffs;
  for (const PreparedKeyPart& p : mine) {
    auto it = theirs.find(p.name());
    if (it == theirs.end()) {
      diffs.push_back(
          absl::StrCat(p.name(), ": not in the file, '", p.value(), "' here"));
      continue;
    }
    if (it->second->value() != p.value()) {
      diffs.push_back(absl::StrCat(p.name(), ": '", it->second->value(),
                                   "' in the file, '", p.value(), "' here"));
    }
    theirs.erase(it);
  }
  for (const PreparedKeyPart& p : file) {
    if (theirs.contains(p.name())) {
      diffs.push_back(absl::StrCat(p.name(), ": '", p.value(),
                                   "' in the file, not a part here"));
    }
  }
  return absl::StrJoin(diffs, "; ");
}

absl::Status WritePreparedModel(const Graph& graph, PreparedModelHeader header,
                                const std::string& path) {
  GraphDef def = graph.def();
  header.clear_consts();
  std::vector<const Tensor*> values;
  int64_t offset = 0;
  for (NodeDef& node : *def.mutable_node()) {
    if (node.op() != "Const") continue;
    const Node* n = graph.FindNode(node.name());
    const Tensor* value = n == nullptr ? nullptr : n->const_value();
    if (value == nullptr || !value->on_host()) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot prepare node '", node.name(),
                       "' (Const): its value is not made on the host"));
    }
    (*node.mutable_attr())["value"] =
        MakeTensorAttr(TensorDescriptionProto(*value));
    offset = RoundUp(offset, kConstAlignment);
    PreparedConst* c = header.add_consts();
    c->set_node(node.name());
    c->set_offset(offset);
    c->set_length(static_cast<int64_t>(value->bytes()));
    offset += c->length();
    values.push_back(value);
  }
  std::string graph_bytes;
  if (!def.SerializeToString(&graph_bytes)) {
    return absl::InvalidArgumentError(
        "cannot serialize the prepared graph (over 2 GiB without its "
        "weights?)");
  }
  header.set_graph_bytes(static_cast<int64_t>(graph_bytes.size()));
  header.set_weights_bytes(offset);
  std::string header_bytes;
  if (!header.SerializeToString(&header_bytes)) {
    return absl::InternalError("cannot serialize the prepared model header");
  }
  uint64_t body = Fingerprint64(graph_bytes.data(), graph_bytes.size());
  for (const Tensor* v : values)
    body = Fingerprint64(v->raw_data(), v->bytes(), body);
  std::string prefix(kPrefixBytes, '\0');
  std::memcpy(prefix.data(), kMagic, sizeof kMagic);
  PutU32(prefix.data() + 8, kPreparedModelFormatVersion);
  PutU64(prefix.data() + 16, header_bytes.size());
  PutU64(prefix.data() + 24,
         Fingerprint64(header_bytes.data(), header_bytes.size()));
  PutU64(prefix.data() + 32, body);
  const std::string tmp = absl::StrCat(path, ".tmp");
  absl::Status written =
      WriteFile(tmp, prefix, header_bytes, graph_bytes,
                WeightsOffset(header, header_bytes.size()), values, header);
  if (written.ok()) {
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (!ec) return absl::OkStatus();
    written = absl::PermissionDeniedError(
        absl::StrCat("cannot rename ", tmp, " to ", path, ": ", ec.message()));
  }
  std::error_code ignored;
  std::filesystem::remove(tmp, ignored);
  return written;
}

absl::StatusOr<PreparedModelHeader> ReadPreparedModelHeader(
    const std::string& path) {
  ASSIGN_OR_RETURN(std::shared_ptr<FileMapping> file, FileMapping::Map(path));
  return ParsePrefixAndHeader(path, file->data(), file->size(),
                              /*check_version=*/false, nullptr);
}

absl::StatusOr<PreparedModel> ReadPreparedModel(
    const std::string& path, absl::Span<const PreparedKeyPart> key) {
  ASSIGN_OR_RETURN(std::shared_ptr<FileMapping> file, FileMapping::Map(path));
  const char* data = file->data();
  const size_t size = file->size();
  uint64_t body_fingerprint = 0;
  ASSIGN_OR_RETURN(
      PreparedModelHeader header,
      ParsePrefixAndHeader(path, data, size,
                           /*check_version=*/true, &body_fingerprint));
  const std::vector<PreparedKeyPart> file_key(header.key().begin(),
                                              header.key().end());
  if (std::string diff = DescribeKeyDifference(file_key, key); !diff.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "prepared model ", path, " was prepared for another setup: ", diff));
  }
  const uint64_t header_bytes = GetU64(data + 16);
  // Each size within the file before they are added up.
  if (header.graph_bytes() < 0 ||
      static_cast<uint64_t>(header.graph_bytes()) > kMaxSectionBytes ||
      header.weights_bytes() < 0 ||
      static_cast<uint64_t>(header.weights_bytes()) > size) {
    return Corrupt(path, "its header's sizes are not possible");
  }
  const int64_t weights_offset = WeightsOffset(header, header_bytes);
  if (weights_offset + header.weights_bytes() != static_cast<int64_t>(size)) {
    return Corrupt(
        path, absl::StrCat("the file is ", size, " bytes; its header says ",
                           weights_offset + header.weights_bytes(),
                           " (truncated, or written over)"));
  }
  const char* graph_data = data + kPrefixBytes + header_bytes;
  uint64_t body = Fingerprint64(graph_data, header.graph_bytes());
  for (const PreparedConst& c : header.consts()) {
    if (c.offset() < 0 || c.length() < 0 || c.offset() % kConstAlignment ||
        c.length() > header.weights_bytes() ||
        c.offset() > header.weights_bytes() - c.length()) {
      return Corrupt(path, absl::StrCat("constant '", c.node(),
                                        "' lies outside the weights"));
    }
    body = Fingerprint64(data + weights_offset + c.offset(), c.length(), body);
  }
  if (body != body_fingerprint) {
    return Corrupt(path,
                   "its graph or weights do not match their fingerprint "
                   "(the file is corrupt)");
  }
  GraphDef def;
  if (!def.ParseFromArray(graph_data, static_cast<int>(header.graph_bytes()))) {
    return Corrupt(path, "its graph does not parse");
  }
  absl::flat_hash_map<std::string, const NodeDef*> by_name;
  for (const NodeDef& n : def.node()) by_name.emplace(n.name(), &n);
  absl::flat_hash_map<std::string, Tensor> values;
  for (const PreparedConst& c : header.consts()) {
    auto it = by_name.find(c.node());
    const AttrValue* attr = nullptr;
    if (it != by_name.end() && it->second->op() == "Const") {
      auto a = it->second->attr().find("value");
      if (a != it->second->attr().end()) attr = &a->second;
    }
    if (attr == nullptr || !attr->has_tensor()) {
      return Corrupt(path, absl::StrCat("constant '", c.node(),
                                        "' has no Const node in its graph"));
    }
    absl::StatusOr<Shape> shape = ShapeFromProto(attr->tensor().shape(), true);
    if (!shape.ok())
      return Corrupt(path, std::string(shape.status().message()));
    // A view of the mapping that keeps it alive.
    std::shared_ptr<Buffer> buffer(
        new Buffer(PreparedAllocator(),
                   file->data() + weights_offset + c.offset(),
                   static_cast<size_t>(c.length())),
        [file](Buffer* b) { delete b; });
    absl::StatusOr<Tensor> t =
        Tensor::FromBuffer(attr->tensor().dtype(), *shape, std::move(buffer));
    if (!t.ok() || static_cast<int64_t>(t->bytes()) != c.length()) {
      return Corrupt(path,
                     absl::StrCat("constant '", c.node(),
                                  "' does not match its dtype and shape"));
    }
    values.emplace(c.node(), *std::move(t));
  }
  GraphSource source;
  source.path = path;
  absl::StatusOr<std::unique_ptr<const Graph>> graph =
      BuildGraphSharingConsts(def, source, values);
  if (!graph.ok()) {
    return Corrupt(path, absl::StrCat("its graph does not build: ",
                                      graph.status().message()));
  }
  PreparedModel out;
  out.graph = *std::move(graph);
  out.header = std::move(header);
  return out;
}

}  // namespace sluice
