// The MPI shim opened at run time (distributed/mpi_library.h): found beside
// the build's libraries, its table complete, and a clear error naming every
// place tried when it is missing.
#include "distributed/mpi_library.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::mpi_library_test {
namespace {

using ::testing::HasSubstr;

TEST(MpiLibraryTest, LooksBesideItsOwnFileThenInLibThenWhereTheLoaderLooks) {
  const std::vector<std::string> c = MpiShimCandidates();
  ASSERT_EQ(c.size(), 3u);
  // This test binary's folder, then ../lib from it (build/lib).
  const std::filesystem::path exe = std::filesystem::canonical("/proc/self/exe");
  EXPECT_EQ(c[0], (exe.parent_path() / kMpiShimName).string());
  EXPECT_EQ(c[1], (exe.parent_path().parent_path() / "lib" / kMpiShimName).string());
  EXPECT_EQ(c[2], kMpiShimName);
}

TEST(MpiLibraryTest, LoadsTheShimTheBuildMadeWithEveryEntryPoint) {
  absl::StatusOr<const MpiApi*> api = LoadMpi();
  ASSERT_TRUE(api.ok()) << api.status();
  const MpiApi& mpi = **api;
  EXPECT_EQ(mpi.version, kMpiApiVersion);
  EXPECT_EQ(mpi.size, sizeof(MpiApi));
  for (const void* fn :
       {reinterpret_cast<const void*>(mpi.Initialized),
        reinterpret_cast<const void*>(mpi.Init_thread),
        reinterpret_cast<const void*>(mpi.Isend),
        reinterpret_cast<const void*>(mpi.Irecv),
        reinterpret_cast<const void*>(mpi.Get_count)}) {
    EXPECT_NE(fn, nullptr);
  }
  // The handles an MPI defines as its globals' addresses (Open MPI) or as
  // numbers (MPICH) were read where MPI is linked: none is a zero value.
  EXPECT_NE(mpi.comm_world, MPI_Comm{});
  EXPECT_NE(mpi.byte, MPI_Datatype{});
  EXPECT_NE(mpi.int64, MPI_Datatype{});
  EXPECT_NE(mpi.uint64, MPI_Datatype{});
  EXPECT_NE(mpi.errors_return, MPI_Errhandler{});
  EXPECT_NE(mpi.int64, mpi.uint64);
  // Callable before MPI_Init (the MPI standard allows these two).
  int initialized = -1;
  EXPECT_EQ(mpi.Initialized(&initialized), MPI_SUCCESS);
  EXPECT_EQ(initialized, 0);
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  ASSERT_EQ(mpi.Get_library_version(version, &length), MPI_SUCCESS);
  EXPECT_GT(length, 0);
  // Loaded once: the same table.
  EXPECT_EQ(*LoadMpi(), *api);
}

TEST(MpiLibraryTest, AMissingShimNamesEveryPlaceLookedIn) {
  absl::StatusOr<const MpiApi*> api = LoadMpiFrom(
      {"/nonexistent/lib/libsluice_mpi.so", "libsluice_mpi_nonexistent.so"});
  ASSERT_FALSE(api.ok());
  EXPECT_EQ(api.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(api.status().message(), HasSubstr("/nonexistent/lib/libsluice_mpi.so"));
  EXPECT_THAT(api.status().message(), HasSubstr("libsluice_mpi_nonexistent.so"));
  EXPECT_THAT(api.status().message(), HasSubstr("nor where the dynamic loader looks"));
}

TEST(MpiLibraryTest, AShimThatIsThereButDoesNotLoadIsTheErrorReported) {
  // As a shim whose libmpi is missing: the file is there, the loader
  // refuses it, and its reason is what the user reads, before any other
  // place's.
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("sluice_mpi_library_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string broken = (dir / kMpiShimName).string();
  { std::ofstream(broken) << "not a shared library"; }
  absl::StatusOr<const MpiApi*> api =
      LoadMpiFrom({"/nonexistent/libsluice_mpi.so", broken, kMpiShimName});
  std::filesystem::remove_all(dir);
  ASSERT_FALSE(api.ok());
  EXPECT_THAT(api.status().message(), HasSubstr(broken));
  EXPECT_THAT(api.status().message(), ::testing::Not(HasSubstr("/nonexistent/")));
}

TEST(MpiLibraryTest, ALibraryWithoutTheTableIsRefusedByName) {
  // libc is a shared library with no sluice_mpi_api.
  absl::StatusOr<const MpiApi*> api = LoadMpiFrom({"libc.so.6"});
  ASSERT_FALSE(api.ok());
  EXPECT_THAT(api.status().message(), HasSubstr("sluice_mpi_api"));
}

}  // namespace
}  // namespace sluice::mpi_library_test
