// LoadMpi (mpi_library.h): the shim found beside sluice's own file.
#include "distributed/mpi_library.h"

#include <dlfcn.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "device/dynamic_library.h"

namespace sluice {
namespace {

// The folder of the file that holds this code: libsluice.so or the Python
// extension when it is a shared library, else the executable. (For code in
// the executable dladdr gives argv[0], which may be a bare name or relative
// to another folder: /proc/self/exe is the file.)
std::filesystem::path OwnFolder() {
  std::error_code ec;
  Dl_info info;
  if (dladdr(reinterpret_cast<const void*>(&MpiShimCandidates), &info) != 0 &&
      info.dli_fname != nullptr &&
      absl::StrContains(std::filesystem::path(info.dli_fname).filename().string(),
                        ".so")) {
    std::filesystem::path file = std::filesystem::canonical(info.dli_fname, ec);
    if (!ec) return file.parent_path();
  }
  std::filesystem::path exe = std::filesystem::canonical("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : exe.parent_path();
}

}  // namespace

std::vector<std::string> MpiShimCandidates() {
  std::vector<std::string> out;
  const std::filesystem::path folder = OwnFolder();
  if (!folder.empty()) {
    out.push_back((folder / kMpiShimName).string());
    // bin/ and lib/ of an install (lib64/ where CMake installs there),
    // tools/ and lib/ of a build folder.
    out.push_back((folder.parent_path() / "lib" / kMpiShimName).string());
    if (std::string(SLUICE_INSTALL_LIBDIR) != "lib") {
      out.push_back(
          (folder.parent_path() / SLUICE_INSTALL_LIBDIR / kMpiShimName).string());
    }
  }
  out.push_back(kMpiShimName);
  return out;
}

absl::StatusOr<const MpiApi*> LoadMpiFrom(
    const std::vector<std::string>& candidates) {
  // The first candidate that is there (a bare name: wherever the loader
  // finds it). A shim that is there but does not load is the answer (its
  // libmpi is missing, most likely): its own error, not the other places'.
  const auto chosen = std::find_if(
      candidates.begin(), candidates.end(), [](const std::string& c) {
        std::error_code ec;
        return c.find('/') == std::string::npos || std::filesystem::exists(c, ec);
      });
  if (chosen == candidates.end()) {
    return absl::NotFoundError(absl::StrCat(
        "no ", kMpiShimName, " in ", absl::StrJoin(candidates, ", ")));
  }
  absl::StatusOr<DynamicLibrary> opened =
      DynamicLibrary::Open({*chosen}, DynamicLibrary::Scope::kGlobal);
  if (!opened.ok() && chosen->find('/') == std::string::npos) {
    return absl::NotFoundError(absl::StrCat(
        "no ", kMpiShimName, " beside sluice (", absl::StrJoin(candidates, ", "),
        ") nor where the dynamic loader looks"));
  }
  if (!opened.ok()) return opened.status();
  DynamicLibrary lib = *std::move(opened);
  using Entry = const MpiApi* (*)(int);
  Entry entry = nullptr;
  lib.Bind("sluice_mpi_api", &entry);
  RETURN_IF_ERROR(lib.CheckAllBound());
  const MpiApi* api = entry(kMpiApiVersion);
  if (api == nullptr || api->size != sizeof(MpiApi)) {
    return absl::FailedPreconditionError(absl::StrCat(
        lib.path(), " is the MPI shim of another sluice build (its table is "
        "not version ", kMpiApiVersion, " of ", sizeof(MpiApi),
        " bytes); use the one built with this sluice"));
  }
  lib.KeepOpen();
  return api;
}

const absl::StatusOr<const MpiApi*>& LoadMpi() {
  static const absl::StatusOr<const MpiApi*>* const loaded =
      new absl::StatusOr<const MpiApi*>(LoadMpiFrom(MpiShimCandidates()));
  return *loaded;
}

}  // namespace sluice
