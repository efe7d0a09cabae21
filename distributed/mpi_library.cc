// LoadMpi (mpi_library.h): the shim found beside sluice's own file.
#include "distributed/mpi_library.h"

#include <dlfcn.h>

#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "device/dynamic_library.h"

namespace sluice {
namespace {

// The folder of the file that holds this code: the executable when sluice
// is linked into it, else libsluice.so or the Python extension.
std::filesystem::path OwnFolder() {
  std::error_code ec;
  Dl_info info;
  if (dladdr(reinterpret_cast<const void*>(&MpiShimCandidates), &info) != 0 &&
      info.dli_fname != nullptr && info.dli_fname[0] != '\0') {
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
    out.push_back((folder.parent_path() / "lib" / kMpiShimName).string());
  }
  out.push_back(kMpiShimName);
  return out;
}

absl::StatusOr<const MpiApi*> LoadMpiFrom(
    const std::vector<std::string>& candidates) {
  ASSIGN_OR_RETURN(DynamicLibrary lib,
                   DynamicLibrary::Open(candidates, DynamicLibrary::Scope::kGlobal));
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

absl::StatusOr<const MpiApi*> LoadMpi() {
  static const absl::StatusOr<const MpiApi*>* const loaded =
      new absl::StatusOr<const MpiApi*>(LoadMpiFrom(MpiShimCandidates()));
  return *loaded;
}

}  // namespace sluice
