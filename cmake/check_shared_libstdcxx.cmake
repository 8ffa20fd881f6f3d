# Fails the build when luminal._C carries its own copy of libstdc++ instead of needing the shared
# libstdc++.so.6. torch loads the shared one; a second, static copy in the same process splits the
# C++ runtime's global state (locale facets, iostream objects), and the first stream output in
# _C crashes (docs/lessons.md, 2026-11-26). Some toolchains link it statically without being asked
# (a compiler in $CXX built or wrapped with -static-libstdc++), so the link result is checked.
#
#   cmake -DMODULE=<_C.so> -DREADELF=<readelf> -DCOMPILER=<c++> -P check_shared_libstdcxx.cmake
execute_process(COMMAND "${READELF}" -d "${MODULE}" OUTPUT_VARIABLE dynamic_section RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "could not read the dynamic section of ${MODULE} with ${READELF}")
endif()
if(NOT dynamic_section MATCHES "libstdc\\+\\+\\.so")
  file(REMOVE "${MODULE}")  # never installed, never imported
  message(FATAL_ERROR
    "luminal._C was linked with a static copy of libstdc++ (the compiler ${COMPILER} links it statically), "
    "and torch loads the shared libstdc++.so.6: the two copies in one process crash at the first stream "
    "output. Build with a compiler that links libstdc++ shared (for example CXX=/usr/bin/g++), or put the "
    "shared library on the link line: "
    "LDFLAGS=\"-Wl,--push-state,--no-as-needed $(g++ -print-file-name=libstdc++.so.6) -Wl,--pop-state\"")
endif()
