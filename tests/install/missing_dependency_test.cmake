# ctest's missing_dependency (cmake -P): configures the source tree with one dependency hidden
# at a time and checks that the configure stops with exactly one error whose own line is the
# Debian command to run (cmake/LorasimRequire.cmake, cmake/check_cmake_version.cmake):
# each library through CMAKE_DISABLE_FIND_PACKAGE_<Pkg>, the compiler through a PATH without
# one, and a too-old CMake through the version check with CMAKE_VERSION set lower.
#
# -D: SOURCE_DIR WORK_DIR GENERATOR, and optionally MAKE_PROGRAM, CXX_COMPILER, PREFIX_PATH
# ('|'-separated: the build's CMAKE_PREFIX_PATH, so every dependency not hidden is found).
cmake_minimum_required(VERSION 3.18)

foreach(var SOURCE_DIR WORK_DIR GENERATOR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "missing_dependency_test.cmake: -D${var}=... is required")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

# Fails the test unless the command failed with one CMake error holding `deb`'s install line.
function(expect_missing name deb)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(rc EQUAL 0)
    message(FATAL_ERROR "${name}: the configure succeeded with the dependency hidden:\n${out}")
  endif()
  string(REPLACE "+" "\\+" deb_regex "${deb}")  # g++
  if(NOT out MATCHES "\n +apt-get install ${deb_regex}\n")
    message(FATAL_ERROR "${name}: the error does not give `apt-get install ${deb}` on a line of its own:\n${out}")
  endif()
  string(REGEX MATCHALL "CMake Error" errors "${out}")
  list(LENGTH errors n)
  if(NOT n EQUAL 1)
    message(FATAL_ERROR "${name}: ${n} errors, expected exactly one:\n${out}")
  endif()
  message(STATUS "${name}: one error, naming ${deb}")
endfunction()

# A configure of the simulator alone (no LibTorch search), with the build's toolchain.
string(REPLACE "|" ";" prefix_path "${PREFIX_PATH}")
set(common -S "${SOURCE_DIR}" -G "${GENERATOR}" "-DCMAKE_PREFIX_PATH=${prefix_path}"
           -DLORASIM_WITH_TORCH=OFF -DLORASIM_BUILD_BENCH=OFF)
if(MAKE_PROGRAM)
  list(APPEND common "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()
if(CXX_COMPILER)
  list(APPEND common "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}")
endif()

# In the order CMakeLists.txt asks for them: each case finds the ones before it.
foreach(case "tomlplusplus|libtomlplusplus-dev" "nlohmann_json|nlohmann-json3-dev"
             "Eigen3|libeigen3-dev" "Boost|libboost-program-options-dev")
  string(REPLACE "|" ";" case "${case}")
  list(GET case 0 pkg)
  list(GET case 1 deb)
  expect_missing(${pkg} ${deb} "${CMAKE_COMMAND}" ${common} -B "${WORK_DIR}/${pkg}"
                 -DLORASIM_BUILD_TESTS=OFF -DCMAKE_DISABLE_FIND_PACKAGE_${pkg}=ON)
endforeach()
expect_missing(GTest libgtest-dev "${CMAKE_COMMAND}" ${common} -B "${WORK_DIR}/GTest"
               -DLORASIM_BUILD_TESTS=ON -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON)

# No compiler: an empty PATH and no CXX; the check runs before project(), so the generator's
# own program is not looked for either.
list(FILTER common EXCLUDE REGEX "^-DCMAKE_CXX_COMPILER=")
file(MAKE_DIRECTORY "${WORK_DIR}/empty-path")
expect_missing(compiler g++ "${CMAKE_COMMAND}" -E env --unset=CXX "PATH=${WORK_DIR}/empty-path"
               "${CMAKE_COMMAND}" ${common} -B "${WORK_DIR}/compiler")

# CMake too old: the same file the top level includes first, under a lower CMAKE_VERSION.
file(WRITE "${WORK_DIR}/old_cmake.cmake"
  "set(CMAKE_VERSION 3.16.3)\ninclude([[${SOURCE_DIR}/cmake/check_cmake_version.cmake]])\n")
expect_missing(cmake-version cmake "${CMAKE_COMMAND}" -P "${WORK_DIR}/old_cmake.cmake")
