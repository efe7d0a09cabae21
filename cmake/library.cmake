# libsluice: every module (proto, core, graph, onnx, model, device, kernels,
# placer, executor) as one shared library (libsluice.so) and one static
# archive (libsluice.a), both made from the modules' own object files, so
# nothing is compiled twice; plus the install rules and the CMake package
# (sluice::sluice) and pkg-config file that other projects build against.
#
# The modules stay separate static libraries inside the build (tests link
# only what they test). Kernels and ops are registered by explicit calls
# (KernelRegistry::Global, OpRegistry::Global), not by static initialisers,
# so the archive loses nothing when the linker drops unreferenced members.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

get_property(sluice_modules GLOBAL PROPERTY SLUICE_MODULES)
set(sluice_objects)
foreach(m ${sluice_modules})
  list(APPEND sluice_objects $<TARGET_OBJECTS:${m}>)
endforeach()

# What the modules link from outside sluice. Eigen, CLI11 and nlohmann-json
# are compile-time only or belong to the CLI.
set(sluice_external_deps protobuf::libprotobuf ${SLUICE_ABSL} Threads::Threads)
if(SLUICE_HAVE_ONNX)
  list(APPEND sluice_external_deps onnx_proto)
endif()
if(SLUICE_HAVE_CUDA)
  list(APPEND sluice_external_deps CUDA::cudart ${CMAKE_DL_LIBS})
endif()
if(SLUICE_HAVE_ONEDNN)
  list(APPEND sluice_external_deps ${SLUICE_ONEDNN_LIBRARIES})
endif()
if(SLUICE_HAVE_MPI)
  # MPI itself is opened at run time through the shim (decision 52).
  list(APPEND sluice_external_deps ${CMAKE_DL_LIBS})
endif()

foreach(kind shared static)
  set(t sluice_${kind})
  string(TOUPPER ${kind} KIND)
  add_library(${t} ${KIND} ${sluice_objects})
  set_target_properties(${t} PROPERTIES
    OUTPUT_NAME sluice
    LINKER_LANGUAGE CXX
    ARCHIVE_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/lib
    LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/lib)
  target_include_directories(${t} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_compile_features(${t} PUBLIC cxx_std_20)
endforeach()
# Public headers use Abseil and protobuf types, so both are part of the
# interface; the rest is needed only to link the static archive.
target_link_libraries(sluice_shared
  PUBLIC protobuf::libprotobuf ${SLUICE_ABSL}
  PRIVATE ${sluice_external_deps})
target_link_libraries(sluice_static PUBLIC ${sluice_external_deps})
set_target_properties(sluice_shared PROPERTIES
  EXPORT_NAME sluice
  VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}
  # Keep the CUDA toolkit's library folder (not a system one) in the
  # installed library's RUNPATH.
  INSTALL_RPATH_USE_LINK_PATH ON)
set_target_properties(sluice_static PROPERTIES EXPORT_NAME sluice_static)
# The same names for projects that add sluice with add_subdirectory.
add_library(sluice::sluice ALIAS sluice_shared)
add_library(sluice::sluice_static ALIAS sluice_static)

# --- Install -------------------------------------------------------------------
install(TARGETS sluice_shared sluice_static EXPORT sluice-targets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# The MPI shim, beside libsluice (and in ../lib from bin/sluice), where
# sluice looks for it when a job is started by mpirun.
if(SLUICE_HAVE_MPI)
  install(TARGETS sluice_mpi LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/sluice
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
# The generated protobuf headers include each other as "proto/x.pb.h" (the
# .proto import paths); installed under include/sluice/proto/ they say
# "sluice/proto/x.pb.h", so consumers need only include/ on their path.
set(sluice_proto_install_dir ${CMAKE_INSTALL_INCLUDEDIR}/sluice/proto)
foreach(h ${SLUICE_PROTO_HDRS})
  install(CODE "
    file(READ \"${h}\" text)
    string(REPLACE \"#include \\\"proto/\" \"#include \\\"sluice/proto/\" text \"\${text}\")
    get_filename_component(name \"${h}\" NAME)
    set(dest \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${sluice_proto_install_dir}\")
    message(STATUS \"Installing: \${dest}/\${name}\")
    file(WRITE \"\${dest}/\${name}\" \"\${text}\")")
endforeach()

set(sluice_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/sluice)
install(EXPORT sluice-targets NAMESPACE sluice:: DESTINATION ${sluice_cmake_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/sluice-config.cmake.in
  ${PROJECT_BINARY_DIR}/sluice-config.cmake INSTALL_DESTINATION ${sluice_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/sluice-config-version.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/sluice-config.cmake
  ${PROJECT_BINARY_DIR}/sluice-config-version.cmake DESTINATION ${sluice_cmake_dir})

# pkg-config: `pkg-config --cflags --libs sluice` (shared) or `--static`.
set(sluice_pc_requires "protobuf")
set(sluice_pc_libs_private "")
foreach(dep ${SLUICE_ABSL})
  string(REPLACE "absl::" "absl_" pc ${dep})
  string(APPEND sluice_pc_requires " ${pc}")
endforeach()
if(SLUICE_HAVE_ONNX)
  string(APPEND sluice_pc_libs_private " -lonnx_proto")
endif()
if(SLUICE_HAVE_ONEDNN)
  string(APPEND sluice_pc_libs_private " -ldnnl -lgomp")
endif()
if(SLUICE_HAVE_CUDA)
  string(APPEND sluice_pc_libs_private " -L${CUDAToolkit_LIBRARY_DIR} -lcudart -ldl")
endif()
file(RELATIVE_PATH sluice_pc_to_prefix /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
if(SLUICE_HAVE_MPI)
  string(APPEND sluice_pc_libs_private " -ldl")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/sluice.pc.in ${PROJECT_BINARY_DIR}/sluice.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/sluice.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
