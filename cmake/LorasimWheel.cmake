# What `pip install .` (pyproject.toml at the root, built by scikit-build-core) puts in the wheel
# beside the lorasim_hf package: the binaries, in the wheel's scripts directory, which pip
# installs into the environment's bin/ -- on PATH in an activated venv, and where
# lorasim_hf.find_lorasim() looks otherwise. They go in the `wheel` component, the only one
# pyproject.toml installs: the C++ package (headers, static libraries, CMake files) is for C++
# consumers (docs/library.md), not for Python users.
function(lorasim_install_wheel)
  if(NOT SKBUILD_SCRIPTS_DIR)
    message(FATAL_ERROR "lorasim_install_wheel(): SKBUILD_SCRIPTS_DIR is unset; only a "
                        "scikit-build-core build (pip install .) installs the wheel's files.")
  endif()
  foreach(bin lorasim lorasim-train)  # lorasim hands training commands to lorasim-train beside it
    if(TARGET ${bin})
      # A LibTorch outside the system library directories (PyPI's torch) must still be found.
      set_target_properties(${bin} PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
      install(TARGETS ${bin} RUNTIME DESTINATION "${SKBUILD_SCRIPTS_DIR}" COMPONENT wheel)
    endif()
  endforeach()
endfunction()
