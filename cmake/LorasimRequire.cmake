# Dependencies that stop the build when missing, each with one error that names the Debian
# package to install (a user of `pip install .` sees this and nothing of CMake's search paths).
#   lorasim_require_cxx_compiler()        before project(): a C++ compiler on PATH
#   lorasim_require_package(<Pkg> [find_package args] DEBIAN <deb> WHAT <what>)
# scripts/install-deps.sh installs every package named here; tests/install/missing_dependency_test.cmake
# checks each message.

# CMake's own "No CMAKE_CXX_COMPILER could be found" does not say what to install. Skipped when
# the compiler is chosen (CMAKE_CXX_COMPILER, $CXX, a toolchain file): CMake then reports a bad
# choice itself, naming it.
macro(lorasim_require_cxx_compiler)
  if(NOT DEFINED CMAKE_CXX_COMPILER AND NOT DEFINED ENV{CXX} AND NOT DEFINED CMAKE_TOOLCHAIN_FILE)
    # The names CMake itself tries first on Unix.
    find_program(LORASIM_CXX_ON_PATH NAMES c++ g++ clang++)
    mark_as_advanced(LORASIM_CXX_ON_PATH)
    if(NOT LORASIM_CXX_ON_PATH)
      message(FATAL_ERROR "lorasim needs a C++17 compiler and none is on PATH (c++, g++, clang++). "
                          "On Debian/Ubuntu install one with\n"
                          "    apt-get install g++\n"
                          "or set CXX to a compiler's path.")
    endif()
  endif()
endmacro()

# find_package(<Pkg> ARGS... QUIET) and, when it fails, one FATAL_ERROR: what lorasim needs it
# for, the Debian package, and the versions CMake found but refused (a too-old package). A macro,
# not a function: find_package's variables (<Pkg>_FOUND, versions) stay visible to the caller.
macro(lorasim_require_package pkg)
  cmake_parse_arguments(_lorasim_req "" "DEBIAN;WHAT" "" ${ARGN})
  if(NOT _lorasim_req_DEBIAN OR NOT _lorasim_req_WHAT)
    message(FATAL_ERROR "lorasim_require_package(${pkg}): DEBIAN and WHAT are required")
  endif()
  find_package(${pkg} ${_lorasim_req_UNPARSED_ARGUMENTS} QUIET)
  if(NOT ${pkg}_FOUND)
    set(_lorasim_req_seen "")
    if(${pkg}_CONSIDERED_VERSIONS)
      set(_lorasim_req_seen " (found only version ${${pkg}_CONSIDERED_VERSIONS} in ${${pkg}_CONSIDERED_CONFIGS}, which does not match)")
    endif()
    # The indented line is printed as is (CMake wraps the rest), so the command can be copied.
    message(FATAL_ERROR "lorasim needs ${_lorasim_req_WHAT}; CMake package ${pkg} not found${_lorasim_req_seen}. "
                        "On Debian/Ubuntu install it with\n"
                        "    apt-get install ${_lorasim_req_DEBIAN}\n"
                        "(scripts/install-deps.sh installs every dependency); elsewhere install it and add "
                        "its prefix to CMAKE_PREFIX_PATH.")
  endif()
endmacro()
