// External data. Loading 1 GiB of weights from a warm page cache is bound
// not by the copy but by the fresh anonymous memory a read lands in: every
// 4 KiB page of it faults on first write and the kernel zeroes it and charges
// it, which costs about twice the copy itself (bench/load_bench.cc). Mapping
// the file shares the page cache's pages instead, so large ranges are mapped;
// everything else is read with pread into uninitialised memory.
#include "core/external_data.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22  // Linux 5.14; older kernels answer EINVAL
#endif

namespace sluice {
namespace {

uintptr_t PageSize() {
  static const uintptr_t kPage = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  return kPage;
}

// The memory of mapped tensors. Each buffer is the tail of its own mapping,
// which starts at the page holding the buffer's first byte; Deallocate unmaps
// it. It cannot allocate.
class MappedFileAllocatorImpl final : public Allocator {
 public:
  std::string Name() const override { return "cpu (mapped file)"; }
  bool host_accessible() const override { return true; }
  absl::StatusOr<void*> Allocate(size_t /*bytes*/) override {
    return absl::UnimplementedError(
        "the mapped-file allocator only releases mappings of weights files");
  }
  void Deallocate(void* ptr, size_t bytes) override {
    const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
    const uintptr_t base = p & ~(PageSize() - 1);
    munmap(reinterpret_cast<void*>(base), p - base + bytes);
  }
};

Allocator* MappedFileAllocator() {
  static Allocator* const kAllocator = new MappedFileAllocatorImpl();
  return kAllocator;
}

// Owns a file descriptor; closes it on destruction.
class ScopedFd {
 public:
  explicit ScopedFd(int fd) : fd_(fd) {}
  ScopedFd(ScopedFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  ScopedFd& operator=(ScopedFd&&) = delete;
  ~ScopedFd() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

// base_dir/path, refusing paths that are absolute or leave base_dir.
absl::StatusOr<std::filesystem::path> ResolveExternalPath(
    const std::string& path, const std::string& base_dir) {
  if (base_dir.empty()) {
    return Invalid(absl::StrCat("external data '", path,
                                "' needs a model folder, and there is none "
                                "(graph not loaded from a file)"));
  }
  if (path.empty()) return Invalid("external data has an empty path");
  if (path.find('\0') != std::string::npos) {
    return Invalid("external data path contains a NUL byte");
  }
  std::filesystem::path p(path);
  if (p.is_absolute() || p.has_root_name() || p.has_root_directory()) {
    return Invalid(absl::StrCat("external data path '", path,
                                "' must be relative to the model folder"));
  }
  std::filesystem::path normal = p.lexically_normal();
  if (normal.empty() || *normal.begin() == ".." || normal == ".") {
    return Invalid(absl::StrCat("external data path '", path,
                                "' leaves the model folder"));
  }
  return std::filesystem::path(base_dir) / normal;
}

absl::Status NotFound(const std::string& file) {
  return absl::NotFoundError(
      absl::StrCat("external data file ", file, " not found"));
}

// Opens `file` for reading and returns its size through `size`. Anything but
// a regular file is refused before it is opened (a FIFO or a device could
// block or act on open) and again after, from the descriptor itself.
absl::StatusOr<ScopedFd> OpenRegularFile(const std::string& file,
                                         int64_t* size) {
  struct stat st;
  if (stat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return NotFound(file);
  }
  ScopedFd fd(open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (fd.get() < 0) {
    const int err = errno;
    if (err == EACCES || err == EPERM) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot open ", file, ": ", std::strerror(err)));
    }
    if (err == ENOENT) return NotFound(file);
    return absl::NotFoundError(
        absl::StrCat("cannot open ", file, ": ", std::strerror(err)));
  }
  if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return NotFound(file);
  *size = static_cast<int64_t>(st.st_size);
  return fd;
}

// Reads [offset, offset + bytes) of `fd` into a new host tensor, in pieces
// of kExternalReadChunkBytes, retrying interrupted and short reads.
absl::StatusOr<Tensor> ReadRange(int fd, const std::string& file,
                                 int64_t offset, int64_t bytes, DataType dtype,
                                 const Shape& shape) {
  ASSIGN_OR_RETURN(Tensor t, Tensor::Create(dtype, shape));  // uninitialised
  char* out = static_cast<char*>(t.raw_data());
  int64_t done = 0;
  while (done < bytes) {
    const size_t want =
        static_cast<size_t>(std::min(bytes - done, kExternalReadChunkBytes));
    const ssize_t got = pread(fd, out + done, want, offset + done);
    if (got < 0) {
      if (errno == EINTR) continue;
      return absl::DataLossError(
          absl::StrCat("cannot read ", file, ": ", std::strerror(errno)));
    }
    if (got == 0) {
      return absl::DataLossError(absl::StrCat(
          "short read from ", file, ": the file ends at byte ", offset + done,
          ", before the end of the range at ", offset + bytes));
    }
    done += got;
  }
  return t;
}

// Maps [offset, offset + bytes) of `fd` copy-on-write, or returns nullopt
// when the kernel will not (the caller then reads the range).
// REQUIRES: bytes > 0, offset % kCpuAlignment == 0, and the range lies
// within the file.
std::optional<Tensor> MapRange(int fd, int64_t offset, int64_t bytes,
                               DataType dtype, const Shape& shape) {
  const int64_t start = offset - offset % static_cast<int64_t>(PageSize());
  const size_t length = static_cast<size_t>(offset - start + bytes);
  // Writable so that a kernel writing into a constant gets a private copy of
  // the page rather than a fault; MAP_PRIVATE keeps the file unchanged.
  void* base = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd,
                    static_cast<off_t>(start));
  if (base == MAP_FAILED) return std::nullopt;
  // Fill the page tables now, so that the load pays for any disk reads, as a
  // read would, and an I/O error or a file that shrank since fstat shows here
  // (EFAULT) rather than as SIGBUS at first use. MAP_POPULATE is not used: on
  // a writable private mapping it write-faults, i.e. copies, every page.
  madvise(base, length, MADV_WILLNEED);  // one readahead when the file is cold
  if (madvise(base, length, MADV_POPULATE_READ) != 0 && errno != EINVAL) {
    munmap(base, length);
    return std::nullopt;
  }
  auto buffer = std::make_shared<Buffer>(
      MappedFileAllocator(), static_cast<char*>(base) + (offset - start),
      static_cast<size_t>(bytes));
  absl::StatusOr<Tensor> t =
      Tensor::FromBuffer(dtype, shape, std::move(buffer));
  if (!t.ok()) return std::nullopt;  // unmapped with the buffer
  return *std::move(t);
}

}  // namespace

absl::StatusOr<Tensor> ReadExternalTensor(const ExternalData& ext,
                                          const std::string& base_dir,
                                          DataType dtype, const Shape& shape,
                                          ExternalDataMode mode) {
  ASSIGN_OR_RETURN(std::filesystem::path path,
                   ResolveExternalPath(ext.path(), base_dir));
  const std::string file = path.string();
  if (ext.offset() < 0 || ext.length() < 0) {
    return Invalid(absl::StrCat("external data '", ext.path(),
                                "' has a negative offset or length"));
  }
  ASSIGN_OR_RETURN(int64_t n, shape.NumElements());
  const int64_t bytes = n * static_cast<int64_t>(DataTypeSize(dtype));
  if (ext.length() != bytes) {
    return Invalid(absl::StrCat("external data '", ext.path(), "' has length ",
                                ext.length(), ", expected ", bytes,
                                " bytes for the tensor"));
  }
  int64_t size = 0;
  ASSIGN_OR_RETURN(ScopedFd fd, OpenRegularFile(file, &size));
  if (ext.offset() > size || ext.length() > size - ext.offset()) {
    return absl::OutOfRangeError(absl::StrCat(
        "external data '", ext.path(), "' range [", ext.offset(), ", +",
        ext.length(), ") runs past the end of the file (", size, " bytes)"));
  }
  if (mode == ExternalDataMode::kMap && bytes >= kMinMappedExternalBytes &&
      ext.offset() % static_cast<int64_t>(kCpuAlignment) == 0) {
    std::optional<Tensor> mapped =
        MapRange(fd.get(), ext.offset(), bytes, dtype, shape);
    if (mapped.has_value()) return *std::move(mapped);
  }
  return ReadRange(fd.get(), file, ext.offset(), bytes, dtype, shape);
}

bool IsMappedExternalData(const Tensor& t) {
  return t.allocator() == MappedFileAllocator();
}

}  // namespace sluice
