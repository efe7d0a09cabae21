# Precompiled headers: the third-party headers that nearly every source file
# includes (the standard library, Abseil, Eigen's core, and GoogleTest in the
# tests) are parsed once per target instead of once per file. They cost
# 3-4 s of a typical file's 4-15 s (Eigen/Core alone, through core/dtype.h,
# about 2 s), which is most of a clean build's C++ time on two cores.
#
# Only stable, external headers go here: a sluice header in the list would
# rebuild a whole target whenever it changed. The list applies to C++ files
# only (never .cu). -DSLUICE_PRECOMPILE_HEADERS=OFF turns it off, e.g. to
# check that every file includes what it uses.
#
# On by default with Clang (the sanitizer builds) only: GCC 12.2 (Debian 12)
# crashed once here (cc1plus segfault, 2026-12-05) compiling a file against
# a freshly built header, and the same command then passed twice; GCC's
# headers are memory images mapped back at run time, Clang's are not. A build
# that may fail at random costs more than the 34% of compile time they save
# (proto, core, graph and their tests, measured with GCC), so GCC builds opt
# in with -DSLUICE_PRECOMPILE_HEADERS=ON.
#
# With ccache, precompiled headers are cached only when its sloppiness allows
# them: `ccache -o sloppiness=pch_defines,time_macros,include_file_mtime,include_file_ctime`.

if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  set(sluice_pch_default ON)
else()
  set(sluice_pch_default OFF)
endif()
option(SLUICE_PRECOMPILE_HEADERS
       "Precompile the common third-party headers once per target" ${sluice_pch_default})

set(SLUICE_PCH_HEADERS
  <algorithm> <cmath> <cstdint> <cstring> <functional> <map> <memory>
  <optional> <string> <utility> <vector>
  <absl/status/status.h> <absl/status/statusor.h>
  <absl/strings/str_cat.h> <absl/strings/str_join.h>
  <absl/strings/string_view.h> <absl/types/span.h>
  <absl/container/flat_hash_map.h> <absl/synchronization/mutex.h>
  <Eigen/Core>)
set(SLUICE_TEST_PCH_HEADERS <gtest/gtest.h> <gmock/gmock.h>)

# sluice_precompile_headers(TARGET [TESTS]): TARGET's C++ files get the
# common headers precompiled; TESTS adds GoogleTest's.
function(sluice_precompile_headers target)
  if(NOT SLUICE_PRECOMPILE_HEADERS)
    return()
  endif()
  cmake_parse_arguments(ARG "TESTS" "" "" ${ARGN})
  set(headers ${SLUICE_PCH_HEADERS})
  if(ARG_TESTS)
    list(APPEND headers ${SLUICE_TEST_PCH_HEADERS})
  endif()
  set(cxx_headers)
  foreach(h ${headers})
    list(APPEND cxx_headers "$<$<COMPILE_LANGUAGE:CXX>:${h}>")
  endforeach()
  target_precompile_headers(${target} PRIVATE ${cxx_headers})
endfunction()
