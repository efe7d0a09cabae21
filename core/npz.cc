#include "core/npz.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "sluice/npy.h"

namespace sluice {
namespace {

// Little-endian fields of the ZIP format (APPNOTE.TXT, sections 4.3.12-16).
uint64_t Le(absl::string_view b, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) {
    v = (v << 8) | static_cast<uint8_t>(b[at + i]);
  }
  return v;
}

constexpr uint32_t kEndOfCentralDir = 0x06054b50;
constexpr uint32_t kZip64EndOfCentralDir = 0x06064b50;
constexpr uint32_t kCentralEntry = 0x02014b50;
constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr uint64_t kZip64Marker = 0xffffffff;

}  // namespace

absl::StatusOr<std::vector<NamedTensor>> ParseNpz(absl::string_view b,
                                                  absl::string_view name) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": not a valid .npz archive: ", why));
  };
  // The end-of-central-directory record: 22 bytes plus a comment of at
  // most 65535, at the end.
  if (b.size() < 22) return bad("too short for a ZIP file");
  size_t eocd = std::string::npos;
  const size_t lowest = b.size() > 22 + 65535 ? b.size() - 22 - 65535 : 0;
  for (size_t at = b.size() - 22 + 1; at-- > lowest;) {
    if (Le(b, at, 4) == kEndOfCentralDir) {
      eocd = at;
      break;
    }
  }
  if (eocd == std::string::npos) return bad("no end of central directory");
  uint64_t count = Le(b, eocd + 10, 2);
  uint64_t dir_offset = Le(b, eocd + 16, 4);
  // ZIP64: the locator (20 bytes) before the record points to the real one.
  if ((count == 0xffff || dir_offset == kZip64Marker) && eocd >= 20 &&
      Le(b, eocd - 20, 4) == 0x07064b50) {
    const uint64_t z = Le(b, eocd - 20 + 8, 8);
    if (z > b.size() || b.size() - z < 56 ||
        Le(b, z, 4) != kZip64EndOfCentralDir) {
      return bad("broken ZIP64 end of central directory");
    }
    count = Le(b, z + 32, 8);
    dir_offset = Le(b, z + 48, 8);
  }
  std::vector<NamedTensor> out;
  uint64_t at = dir_offset;
  for (uint64_t i = 0; i < count; ++i) {
    if (at > b.size() || b.size() - at < 46 || Le(b, at, 4) != kCentralEntry) {
      return bad(absl::StrCat("central directory entry ", i, " is broken"));
    }
    const uint64_t method = Le(b, at + 10, 2);
    uint64_t size = Le(b, at + 20, 4);  // compressed = stored size
    const uint64_t name_len = Le(b, at + 28, 2);
    const uint64_t extra_len = Le(b, at + 30, 2);
    const uint64_t comment_len = Le(b, at + 32, 2);
    uint64_t local = Le(b, at + 42, 4);
    if (b.size() - at - 46 < name_len + extra_len + comment_len) {
      return bad(absl::StrCat("central directory entry ", i, " overruns"));
    }
    const std::string member(b.substr(at + 46, name_len));
    // ZIP64 extra field (id 1): the 8-byte values whose 4-byte fields are
    // 0xffffffff, in the order uncompressed size, compressed size, offset.
    const uint64_t extra_end = at + 46 + name_len + extra_len;
    for (uint64_t e = at + 46 + name_len; e + 4 <= extra_end;) {
      const uint64_t id = Le(b, e, 2), len = Le(b, e + 2, 2);
      if (id == 1) {
        uint64_t f = e + 4;
        const uint64_t end = std::min<uint64_t>(f + len, b.size());
        if (Le(b, at + 24, 4) == kZip64Marker && f + 8 <= end) f += 8;
        if (size == kZip64Marker && f + 8 <= end) size = Le(b, f, 8), f += 8;
        if (local == kZip64Marker && f + 8 <= end) local = Le(b, f, 8);
      }
      e += 4 + len;
    }
    at += 46 + name_len + extra_len + comment_len;
    if (method != 0) {
      return absl::UnimplementedError(absl::StrCat(
          name, ": member '", member,
          "' is compressed (np.savez_compressed); write it with np.savez"));
    }
    if (!absl::EndsWith(member, ".npy")) {
      return bad(absl::StrCat("member '", member, "' is not a .npy"));
    }
    if (local > b.size() || b.size() - local < 30 ||
        Le(b, local, 4) != kLocalHeader) {
      return bad(absl::StrCat("member '", member, "' has no local header"));
    }
    const uint64_t data =
        local + 30 + Le(b, local + 26, 2) + Le(b, local + 28, 2);
    if (data > b.size() || b.size() - data < size) {
      return bad(absl::StrCat("member '", member, "' overruns the file"));
    }
    const std::string label = absl::StrCat(name, ":", member);
    absl::StatusOr<Tensor> t = ParseNpy(b.substr(data, size), label);
    if (!t.ok()) return t.status();
    out.emplace_back(member.substr(0, member.size() - 4), *std::move(t));
  }
  return out;
}

absl::StatusOr<std::vector<NamedTensor>> ReadNpz(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open '", path, "'"));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return ParseNpz(bytes.str(), path);
}

}  // namespace sluice
