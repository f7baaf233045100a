# Install rules and the CMake package: `cmake --install build --prefix P` gives
#   P/lib/libtritium.so                       the library
#   P/include/tritium/tritium.h               the one header a user includes...
#   P/include/tritium/{common,dsl,...}/*.h    ...and the headers it and the op/nn/autotune APIs include
#   P/lib/cmake/Tritium/TritiumConfig.cmake   find_package(Tritium) -> imported target Tritium::tritium
# (docs/cmake.md).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS tritium EXPORT TritiumTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# The headers keep the source tree's layout under include/tritium, because they include each other
# as "dsl/kernel.h" (the target adds include/tritium to the include path). jit/ is internal: no
# installed header includes it (tests/consumer checks the installed tree compiles on its own).
install(FILES ${PROJECT_SOURCE_DIR}/include/tritium/tritium.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tritium)
foreach(dir common dsl ir runtime ops nn autotune io profiler dist)  # dist: issue 32 (nn/ddp.h includes it)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tritium
    FILES_MATCHING PATTERN "*.h")
endforeach()

set(TRITIUM_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Tritium)
install(EXPORT TritiumTargets NAMESPACE Tritium:: DESTINATION ${TRITIUM_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/TritiumConfig.cmake.in
  ${PROJECT_BINARY_DIR}/TritiumConfig.cmake INSTALL_DESTINATION ${TRITIUM_CMAKE_DIR})
# 0.x: a minor version may change the API, so only the same minor version is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/TritiumConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/TritiumConfig.cmake ${PROJECT_BINARY_DIR}/TritiumConfigVersion.cmake
  DESTINATION ${TRITIUM_CMAKE_DIR})
