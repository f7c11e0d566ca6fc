# Install rules and the exported CMake package, so that another project can
#   find_package(lorasim REQUIRED)            # lorasim::model, ::hwprofiles, ::simulator, ::fit
#   find_package(lorasim REQUIRED COMPONENTS calibrate)   # and lorasim::calibrate (needs Torch)
# Each library folder calls lorasim_install_library() next to its add_library(); the top level
# calls lorasim_install_package() once every target exists. docs/library.md is the user's side.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Public headers keep the repo-root include paths: include/lorasim/simulator/simulate.h is
# `#include "simulator/simulate.h"` for consumers as in the tree. The libraries'
# $<INSTALL_INTERFACE:...> include directory is this path.
set(LORASIM_INSTALL_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}/lorasim")
set(LORASIM_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/lorasim")

# lorasim_install_library(<target> EXPORT_NAME <name> [EXPORT_SET <set>] HEADERS <h>...)
# Exports <target> as lorasim::<name> (the same name as its alias in the tree) and installs
# HEADERS, relative to the calling folder, under include/lorasim/<folder>/. Headers not listed
# are private (generated-code interfaces, anything that includes torch).
function(lorasim_install_library target)
  cmake_parse_arguments(L "" "EXPORT_NAME;EXPORT_SET" "HEADERS" ${ARGN})
  if(NOT L_EXPORT_NAME OR NOT L_HEADERS)
    message(FATAL_ERROR "lorasim_install_library(${target}): EXPORT_NAME and HEADERS are required")
  endif()
  if(NOT L_EXPORT_SET)
    set(L_EXPORT_SET lorasimTargets)
  endif()
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${L_EXPORT_NAME})
  if(NOT LORASIM_INSTALL)
    return()
  endif()
  get_filename_component(folder "${CMAKE_CURRENT_SOURCE_DIR}" NAME)
  install(TARGETS ${target} EXPORT ${L_EXPORT_SET}
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(FILES ${L_HEADERS} DESTINATION "${LORASIM_INSTALL_INCLUDEDIR}/${folder}")
endfunction()

# The binaries, the export files and lorasimConfig.cmake / lorasimConfigVersion.cmake.
function(lorasim_install_package)
  if(NOT LORASIM_INSTALL)
    return()
  endif()
  # lorasim-train (LibTorch builds) goes beside lorasim, which hands training commands to it.
  # A LibTorch outside the system library directories (an unpacked libtorch zip) must still
  # be found by the installed binaries, which lose the build tree's RPATH.
  foreach(bin lorasim lorasim-train)
    if(TARGET ${bin})
      set_target_properties(${bin} PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
      install(TARGETS ${bin} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
    endif()
  endforeach()
  install(FILES "${PROJECT_SOURCE_DIR}/LICENSE" DESTINATION ${CMAKE_INSTALL_DOCDIR})

  install(EXPORT lorasimTargets NAMESPACE lorasim:: DESTINATION ${LORASIM_INSTALL_CMAKEDIR})

  # Static libraries list their PRIVATE dependencies in their link interface as
  # $<LINK_ONLY:nlohmann_json::nlohmann_json> and so on, so lorasimConfig.cmake must find them
  # for the consumer; shared libraries have linked them already.
  get_target_property(model_type lorasim_model TYPE)
  if(model_type STREQUAL "STATIC_LIBRARY")
    set(LORASIM_STATIC_LIBS ON)
  else()
    set(LORASIM_STATIC_LIBS OFF)
  endif()

  # calibrate is a component of its own: linking it drags in LibTorch (a static library's
  # private dependencies are the consumer's link dependencies), and a simulator-only consumer
  # should not need Torch installed to find_package(lorasim).
  set(LORASIM_HAS_CALIBRATE OFF)
  set(LORASIM_CALIBRATE_NEEDS_CUDART OFF)
  if(TARGET lorasim_calibrate)
    set(LORASIM_HAS_CALIBRATE ON)
    install(EXPORT lorasimCalibrateTargets NAMESPACE lorasim::
            DESTINATION ${LORASIM_INSTALL_CMAKEDIR})
    get_target_property(calibrate_libs lorasim_calibrate LINK_LIBRARIES)
    if("CUDA::cudart" IN_LIST calibrate_libs)
      set(LORASIM_CALIBRATE_NEEDS_CUDART ON)
    endif()
  endif()

  configure_package_config_file(
    "${PROJECT_SOURCE_DIR}/cmake/lorasimConfig.cmake.in"
    "${PROJECT_BINARY_DIR}/lorasimConfig.cmake"
    INSTALL_DESTINATION ${LORASIM_INSTALL_CMAKEDIR})
  # 0.x: a minor release may change the API, so only the same major.minor is compatible.
  write_basic_package_version_file("${PROJECT_BINARY_DIR}/lorasimConfigVersion.cmake"
    COMPATIBILITY SameMinorVersion)
  install(FILES "${PROJECT_BINARY_DIR}/lorasimConfig.cmake"
                "${PROJECT_BINARY_DIR}/lorasimConfigVersion.cmake"
          DESTINATION ${LORASIM_INSTALL_CMAKEDIR})
endfunction()
