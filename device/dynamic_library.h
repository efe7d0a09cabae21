// DynamicLibrary: a shared library opened at run time (dlopen), the first
// of several file names that loads, with its entry points resolved by name
// into typed function pointers. sluice links none of the CUDA libraries it
// can use (cuBLAS, cuBLASLt, cuDNN, NVRTC: device/cuda/*_api.h,
// *_library.h), so a binary starts without them; each loader is this class
// plus its table of entry points and what it checks of the version.
//
// Where a library is looked for, as PyTorch does: first in NVIDIA's pip
// packages (nvidia-cublas, nvidia-cudnn-cu13, nvidia-cuda-nvrtc, ...), whose
// libraries sit in <site-packages>/nvidia/<package>/lib/, under each of the
// package roots the Python package registers at import (its sys.path
// entries that hold an nvidia/ folder); then where the dynamic loader looks
// (LD_LIBRARY_PATH, the ld.so cache, the system folders). A program that
// sets no roots (the CLI, a C++ program) goes straight to the loader.
//
//   DynamicLibrary::SetPackageRoots({"/venv/lib/python3.12/site-packages"});
//   ASSIGN_OR_RETURN(DynamicLibrary lib,
//                    DynamicLibrary::Open({"libnvrtc.so.13", "libnvrtc.so"}));
//   lib.Bind("nvrtcVersion", &api.Version).Bind("nvrtcCompileProgram", &api.Compile);
//   RETURN_IF_ERROR(lib.CheckAllBound());  // "<file> lacks nvrtcCompileProgram"
//   api.dl_handle = lib.KeepOpen();        // the pointers outlive `lib`
//
// One object is not thread-safe: one thread opens and binds; the resolved
// pointers may then be used from any thread (dlopen and dlsym themselves
// are). SetPackageRoots and Open may be called from any thread.
#ifndef SLUICE_DEVICE_DYNAMIC_LIBRARY_H_
#define SLUICE_DEVICE_DYNAMIC_LIBRARY_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace sluice {

class DynamicLibrary {
 public:
  // Opens the first of `names` that loads (RTLD_NOW, and `scope`): each
  // bare file name (no '/') first from the package library folders
  // (PackageLibraryDirs), in their order, then every name as dlopen looks it
  // up. NOT_FOUND naming every name tried, the folders searched and the
  // loader's reason for each name when none loads. REQUIRES: `names` is not
  // empty.
  // `scope`: whose symbol lookups see the library's symbols and its
  // dependencies': its own users' only (RTLD_LOCAL), or every library loaded
  // later too (RTLD_GLOBAL: MPI, whose plugins, opened by MPI itself, take
  // their symbols from the libmpi already loaded).
  enum class Scope { kLocal, kGlobal };
  static absl::StatusOr<DynamicLibrary> Open(const std::vector<std::string>& names,
                                             Scope scope = Scope::kLocal);

  // Replaces the package roots (site-packages folders) whose nvidia/*/lib
  // folders Open searches first; {} searches none. Libraries already opened
  // stay as they are.
  static void SetPackageRoots(std::vector<std::string> roots);
  static std::vector<std::string> PackageRoots();
  // The folders Open searches before the loader: root/nvidia/<package>/lib
  // for each root in order, packages in name order within a root (CUDA 13's
  // toolkit packages share nvidia/cu13/lib; cuDNN's is nvidia/cudnn/lib).
  // Read from the file system at each call.
  static std::vector<std::string> PackageLibraryDirs();

  DynamicLibrary(DynamicLibrary&& other) noexcept;
  DynamicLibrary& operator=(DynamicLibrary&& other) noexcept;
  DynamicLibrary(const DynamicLibrary&) = delete;
  DynamicLibrary& operator=(const DynamicLibrary&) = delete;
  // Closes the library unless KeepOpen was called: pointers bound from it
  // are then dangling.
  ~DynamicLibrary();

  // The name of `names` that loaded.
  const std::string& name() const { return name_; }
  // The file it resolved to (the loader's link map), else name().
  const std::string& path() const { return path_; }

  // The address of `symbol`; NOT_FOUND naming the symbol and path().
  absl::StatusOr<void*> Symbol(const char* symbol) const;

  // Resolves `symbol` into *slot (a function pointer of the exported type);
  // a symbol the library lacks leaves *slot null and is remembered for
  // CheckAllBound and missing_symbols. Returns *this, to chain.
  template <typename Fn>
  DynamicLibrary& Bind(const char* symbol, Fn* slot) {
    void* p = Lookup(symbol);
    *slot = p != nullptr ? reinterpret_cast<Fn>(p) : nullptr;
    return *this;
  }
  // The symbols Bind did not find, in the order asked for.
  const std::vector<std::string>& missing_symbols() const { return missing_; }
  // OK when every Bind found its symbol; otherwise FAILED_PRECONDITION
  // "<path> lacks <symbol>, <symbol>".
  absl::Status CheckAllBound() const;

  // Leaves the library loaded for the rest of the process (the functions
  // bound from it outlive this object) and returns its dlopen handle.
  void* KeepOpen();

 private:
  DynamicLibrary(void* handle, std::string name, std::string path)
      : handle_(handle), name_(std::move(name)), path_(std::move(path)) {}
  // dlsym; records a miss.
  void* Lookup(const char* symbol);

  void* handle_ = nullptr;  // null once moved from
  bool keep_open_ = false;
  std::string name_, path_;
  std::vector<std::string> missing_;
};

}  // namespace sluice

#endif  // SLUICE_DEVICE_DYNAMIC_LIBRARY_H_
