// DynamicLibrary (dynamic_library.h): dlopen, dlsym, dlinfo for the file.
#include "device/dynamic_library.h"

#include <dlfcn.h>
#include <link.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace sluice {
namespace {

// dlerror()'s message, or `fallback` when it has none.
std::string LoaderError(const char* fallback) {
  const char* why = dlerror();
  return why != nullptr ? why : fallback;
}

// The file a dlopen handle refers to, or `fallback`.
std::string LoadedPath(void* handle, const std::string& fallback) {
  struct link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr &&
      map->l_name != nullptr && map->l_name[0] != '\0') {
    return map->l_name;
  }
  return fallback;
}

}  // namespace

absl::StatusOr<DynamicLibrary> DynamicLibrary::Open(
    const std::vector<std::string>& names) {
  std::vector<std::string> tried;
  for (const std::string& name : names) {
    dlerror();
    void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) {
      return DynamicLibrary(handle, name, LoadedPath(handle, name));
    }
    tried.push_back(LoaderError("unknown reason"));
  }
  if (names.size() == 1) {
    return absl::NotFoundError(
        absl::StrCat("cannot open ", names[0], ": ", tried[0]));
  }
  return absl::NotFoundError(absl::StrCat("cannot open any of ",
                                          absl::StrJoin(names, ", "), " (",
                                          absl::StrJoin(tried, "; "), ")"));
}

DynamicLibrary::DynamicLibrary(DynamicLibrary&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)),
      keep_open_(other.keep_open_),
      name_(std::move(other.name_)),
      path_(std::move(other.path_)),
      missing_(std::move(other.missing_)) {}

DynamicLibrary& DynamicLibrary::operator=(DynamicLibrary&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr && !keep_open_) dlclose(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
    keep_open_ = other.keep_open_;
    name_ = std::move(other.name_);
    path_ = std::move(other.path_);
    missing_ = std::move(other.missing_);
  }
  return *this;
}

DynamicLibrary::~DynamicLibrary() {
  if (handle_ != nullptr && !keep_open_) dlclose(handle_);
}

absl::StatusOr<void*> DynamicLibrary::Symbol(const char* symbol) const {
  // dlsym(nullptr, ...) would search the whole process (RTLD_DEFAULT).
  if (handle_ == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("looking up ", symbol, " in a moved-from DynamicLibrary"));
  }
  dlerror();
  void* p = dlsym(handle_, symbol);
  if (p == nullptr) {
    return absl::NotFoundError(absl::StrCat(path_, " has no ", symbol, ": ",
                                            LoaderError("a null symbol")));
  }
  return p;
}

void* DynamicLibrary::Lookup(const char* symbol) {
  absl::StatusOr<void*> p = Symbol(symbol);
  if (p.ok()) return *p;
  missing_.push_back(symbol);
  return nullptr;
}

absl::Status DynamicLibrary::CheckAllBound() const {
  if (missing_.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat(path_, " lacks ", absl::StrJoin(missing_, ", ")));
}

void* DynamicLibrary::KeepOpen() {
  keep_open_ = true;
  return handle_;
}

}  // namespace sluice
