# Included by the top-level CMakeLists.txt before cmake_minimum_required(), so that a CMake too
# old for lorasim stops with the package to install instead of CMake's bare version error.
# Only if() and message(): it must parse under any CMake 3.x.
if(CMAKE_VERSION VERSION_LESS 3.18)
  message(FATAL_ERROR "lorasim needs CMake 3.18 or newer; this is CMake ${CMAKE_VERSION}. "
                      "On Debian/Ubuntu install it with\n"
                      "    apt-get install cmake\n"
                      "(Debian 12 has 3.25); elsewhere pip install cmake. `pip install .` from the "
                      "repository root fetches a new enough CMake for its own build.")
endif()
