// SluiceBuildId (core/build_id.h): dl_iterate_phdr finds the loaded object
// whose segments hold this function, and its PT_NOTE segments the
// NT_GNU_BUILD_ID note the linker wrote.
#include "core/build_id.h"

#include <elf.h>
#include <link.h>

#include <cstdint>
#include <cstring>

#include "absl/strings/str_format.h"

namespace sluice {
namespace {

struct Search {
  uintptr_t address = 0;  // inside the object we want
  std::string id;
};

size_t Align4(size_t n) { return (n + 3) & ~size_t{3}; }

int VisitObject(dl_phdr_info* info, size_t /*size*/, void* data) {
  auto* search = static_cast<Search*>(data);
  bool contains = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    const uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    if (search->address >= start && search->address < start + ph.p_memsz) {
      contains = true;
    }
  }
  if (!contains) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const auto* p =
        reinterpret_cast<const unsigned char*>(info->dlpi_addr + ph.p_vaddr);
    const unsigned char* const end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      ElfW(Nhdr) note;
      std::memcpy(&note, p, sizeof note);
      const unsigned char* name = p + sizeof note;
      const unsigned char* desc = name + Align4(note.n_namesz);
      if (desc + note.n_descsz > end) break;
      if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 &&
          std::memcmp(name, "GNU", 4) == 0) {
        for (size_t k = 0; k < note.n_descsz; ++k) {
          search->id += absl::StrFormat("%02x", desc[k]);
        }
        return 1;
      }
      p = desc + Align4(note.n_descsz);
    }
  }
  return 1;  // our object, without a build ID
}

}  // namespace

const std::string& SluiceBuildId() {
  static const std::string* const kId = [] {
    Search search;
    search.address = reinterpret_cast<uintptr_t>(&VisitObject);
    dl_iterate_phdr(&VisitObject, &search);
    return new std::string(std::move(search.id));
  }();
  return *kId;
}

}  // namespace sluice
