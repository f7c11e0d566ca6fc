# ctest's install_consumer (cmake -P): installs the already-built tree into a scratch prefix,
# checks the layout, runs the installed binary, then configures, builds and runs
# tests/install/consumer against the prefix through find_package(lorasim). With calibrate/
# built it also builds the consumer with COMPONENTS calibrate; without, it checks that asking
# for the component fails with a message that says why.
#
# -D: BUILD_DIR WORK_DIR CONSUMER_DIR GENERATOR BINDIR LIBDIR INCLUDEDIR HAS_CALIBRATE, and
# optionally CONFIG, MAKE_PROGRAM, CXX_COMPILER, PREFIX_PATH ('|'-separated: the build's
# CMAKE_PREFIX_PATH, so the consumer finds the same dependencies).
cmake_minimum_required(VERSION 3.18)

foreach(var BUILD_DIR WORK_DIR CONSUMER_DIR GENERATOR BINDIR LIBDIR INCLUDEDIR HAS_CALIBRATE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "install_test.cmake: -D${var}=... is required")
  endif()
endforeach()

set(prefix "${WORK_DIR}/prefix")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

# Runs a command; fails the test with its output unless it exits 0. Leaves the output in `out`.
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

set(config_args "")
if(CONFIG)
  set(config_args --config "${CONFIG}")
endif()

# 1. Install the build tree.
run("cmake --install" "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${prefix}" ${config_args})

# 2. The layout consumers rely on, and no private header (one includes torch, one is the
#    generated code's interface).
set(cmakedir "${prefix}/${LIBDIR}/cmake/lorasim")
set(incdir "${prefix}/${INCLUDEDIR}/lorasim")
foreach(f "${prefix}/${BINDIR}/lorasim"
          "${cmakedir}/lorasimConfig.cmake" "${cmakedir}/lorasimConfigVersion.cmake"
          "${cmakedir}/lorasimTargets.cmake"
          "${incdir}/model/workload.h" "${incdir}/hwprofiles/builtin.h"
          "${incdir}/simulator/simulate.h" "${incdir}/calibrate/fit.h")
  if(NOT EXISTS "${f}")
    message(FATAL_ERROR "not installed: ${f}")
  endif()
endforeach()
foreach(f "${incdir}/hwprofiles/embedded.h" "${incdir}/calibrate/lora_decoder.h"
          "${incdir}/calibrate/memory_meter.h")
  if(EXISTS "${f}")
    message(FATAL_ERROR "private header installed: ${f}")
  endif()
endforeach()
if(HAS_CALIBRATE)
  foreach(f "${cmakedir}/lorasimCalibrateTargets.cmake" "${prefix}/${BINDIR}/lorasim-train")
    if(NOT EXISTS "${f}")
      message(FATAL_ERROR "calibrate/ was built but not installed: ${f}")
    endif()
  endforeach()
endif()

# 3. The installed binaries run (their RPATH is rewritten on install).
run("installed lorasim --version" "${prefix}/${BINDIR}/lorasim" --version)
message(STATUS "installed: ${out}")
if(HAS_CALIBRATE)
  run("installed lorasim-train --version" "${prefix}/${BINDIR}/lorasim-train" --version)
endif()

# 4. The consumer. Settings go through an initial cache so that list values keep their ';'.
string(REPLACE "|" ";" prefix_path "${prefix};${PREFIX_PATH}")
file(WRITE "${WORK_DIR}/init.cmake"
  "set(CMAKE_PREFIX_PATH [[${prefix_path}]] CACHE STRING \"\")\n"
  "set(CMAKE_BUILD_TYPE [[${CONFIG}]] CACHE STRING \"\")\n"
  "set(CMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY ON CACHE BOOL \"\")\n")
if(MAKE_PROGRAM)
  file(APPEND "${WORK_DIR}/init.cmake" "set(CMAKE_MAKE_PROGRAM [[${MAKE_PROGRAM}]] CACHE FILEPATH \"\")\n")
endif()
if(CXX_COMPILER)  # the same compiler, so the consumer agrees with the libraries' ABI
  file(APPEND "${WORK_DIR}/init.cmake" "set(CMAKE_CXX_COMPILER [[${CXX_COMPILER}]] CACHE FILEPATH \"\")\n")
endif()

function(configure_consumer name)
  execute_process(
    COMMAND "${CMAKE_COMMAND}" -C "${WORK_DIR}/init.cmake" -S "${CONSUMER_DIR}"
            -B "${WORK_DIR}/${name}" -G "${GENERATOR}" ${ARGN}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  set(rc "${rc}" PARENT_SCOPE)
  set(out "${out}" PARENT_SCOPE)
endfunction()

function(check_consumer name expect_line)
  configure_consumer(${name} ${ARGN})
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "configuring the consumer (${name}) failed (${rc}):\n${out}")
  endif()
  # Found the scratch install, not another lorasim on the machine.
  string(FIND "${out}" " from ${prefix}/" pos)
  if(pos EQUAL -1)
    message(FATAL_ERROR "the consumer (${name}) did not find lorasim in ${prefix}:\n${out}")
  endif()
  run("building the consumer (${name})" "${CMAKE_COMMAND}" --build "${WORK_DIR}/${name}" ${config_args})
  set(exe "${WORK_DIR}/${name}/consumer")
  if(CONFIG AND NOT EXISTS "${exe}")
    set(exe "${WORK_DIR}/${name}/${CONFIG}/consumer")  # multi-config generators
  endif()
  run("running the consumer (${name})" "${exe}")
  if(NOT out MATCHES "recommended split: micro_batch=[0-9]+ accumulation=[0-9]+")
    message(FATAL_ERROR "the consumer (${name}) printed no recommended split:\n${out}")
  endif()
  if(NOT out MATCHES "${expect_line}")
    message(FATAL_ERROR "the consumer (${name}) printed no '${expect_line}':\n${out}")
  endif()
  message(STATUS "consumer (${name}): ${out}")
endfunction()

check_consumer(simulator "step_time_s=")
if(HAS_CALIBRATE)
  check_consumer(calibrate "calibrate: LibTorch " -DCONSUMER_WITH_CALIBRATE=ON)
else()
  configure_consumer(calibrate -DCONSUMER_WITH_CALIBRATE=ON)
  if(rc EQUAL 0 OR NOT out MATCHES "LORASIM_WITH_TORCH=OFF")
    message(FATAL_ERROR "COMPONENTS calibrate of a build without LibTorch should fail and say "
                        "why (${rc}):\n${out}")
  endif()
  message(STATUS "COMPONENTS calibrate refused as expected (built without LibTorch)")
endif()
