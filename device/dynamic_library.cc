// DynamicLibrary (dynamic_library.h): dlopen, dlsym, dlinfo for the file;
// the package folders searched before the loader.
#include "device/dynamic_library.h"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"

namespace sluice {
namespace {

// The package roots (SetPackageRoots), process-wide.
struct PackageRootList {
  absl::Mutex mu;
  std::vector<std::string> roots ABSL_GUARDED_BY(mu);
};

PackageRootList& Roots() {
  static PackageRootList* const list = new PackageRootList();
  return *list;
}

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

void DynamicLibrary::SetPackageRoots(std::vector<std::string> roots) {
  PackageRootList& list = Roots();
  absl::MutexLock lock(&list.mu);
  list.roots = std::move(roots);
}

std::vector<std::string> DynamicLibrary::PackageRoots() {
  PackageRootList& list = Roots();
  absl::MutexLock lock(&list.mu);
  return list.roots;
}

std::vector<std::string> DynamicLibrary::PackageLibraryDirs() {
  namespace fs = std::filesystem;
  std::vector<std::string> dirs;
  for (const std::string& root : PackageRoots()) {
    std::error_code ec;
    std::vector<std::string> here;
    for (fs::directory_iterator it(fs::path(root) / "nvidia", ec), end;
         !ec && it != end; it.increment(ec)) {
      const fs::path lib = it->path() / "lib";
      if (fs::is_directory(lib, ec)) here.push_back(lib.string());
    }
    std::sort(here.begin(), here.end());
    dirs.insert(dirs.end(), here.begin(), here.end());
  }
  return dirs;
}

absl::StatusOr<DynamicLibrary> DynamicLibrary::Open(
    const std::vector<std::string>& names, Scope scope) {
  const int flags =
      RTLD_NOW | (scope == Scope::kGlobal ? RTLD_GLOBAL : RTLD_LOCAL);
  // NVIDIA's pip packages first, as bare names' full paths there.
  const std::vector<std::string> dirs = PackageLibraryDirs();
  std::vector<std::string> passed_over;  // copies there that did not load
  for (const std::string& name : names) {
    if (name.find('/') != std::string::npos) continue;
    for (const std::string& dir : dirs) {
      const std::string path = absl::StrCat(dir, "/", name);
      std::error_code ec;
      if (!std::filesystem::exists(path, ec)) continue;
      dlerror();
      if (void* handle = dlopen(path.c_str(), flags)) {
        return DynamicLibrary(handle, name, LoadedPath(handle, path));
      }
      // A copy that does not load (wrong architecture, missing
      // dependencies) is passed over for the next place, and named.
      passed_over.push_back(LoaderError(path.c_str()));
    }
  }
  std::vector<std::string> tried;
  for (const std::string& name : names) {
    dlerror();
    void* handle = dlopen(name.c_str(), flags);
    if (handle != nullptr) {
      return DynamicLibrary(handle, name, LoadedPath(handle, name));
    }
    tried.push_back(LoaderError("unknown reason"));
  }
  std::string searched;
  if (!dirs.empty()) {
    absl::StrAppend(&searched, "; searched first in ", absl::StrJoin(dirs, ", "));
  }
  if (!passed_over.empty()) {
    absl::StrAppend(&searched, "; passed over: ", absl::StrJoin(passed_over, "; "));
  }
  if (names.size() == 1) {
    return absl::NotFoundError(
        absl::StrCat("cannot open ", names[0], ": ", tried[0], searched));
  }
  return absl::NotFoundError(absl::StrCat(
      "cannot open any of ", absl::StrJoin(names, ", "), " (",
      absl::StrJoin(tried, "; "), ")", searched));
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
