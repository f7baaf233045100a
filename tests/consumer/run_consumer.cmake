# Configures, builds and runs tests/consumer/project, an outside project using Tritium, one way:
#   cmake -DMODE=package|subdirectory -DSOURCE_DIR=<tritium source> -DBINARY_DIR=<tritium build>
#         -DWORK_DIR=<scratch> -DGENERATOR=... -DCXX_COMPILER=... -DBUILD_TYPE=...
#         -DCPU_BACKEND=ON|OFF -DCUDA_BACKEND=ON|OFF -DMAKE_PROGRAM=<ninja>
#         -DCXX_FLAGS=... -DCXX_FLAGS_CONFIG=... -DEXE_LINKER_FLAGS=... -DSHARED_LINKER_FLAGS=...
#         -P run_consumer.cmake
# The flags are the Tritium build's own (CMAKE_CXX_FLAGS, CMAKE_CXX_FLAGS_<BUILD_TYPE>, the linker
# flags), given to the consumer's build too: a sanitizer build's library needs its runtime in the
# program, and the add_subdirectory mode reuses objects only where the compile commands match.
# package:      `cmake --install` of the already-built BINARY_DIR into WORK_DIR/prefix, then the
#               consumer finds it with find_package(Tritium) and builds only its own main.cpp.
# subdirectory: the consumer add_subdirectory()s SOURCE_DIR, so Tritium is configured, generated
#               and linked inside the consumer's build; its object files are taken from BINARY_DIR
#               where the compile command (compile_commands.json) and the inputs are the same
#               (reuse_objects.sh, a compiler launcher), so the library is not compiled twice.
cmake_minimum_required(VERSION 3.25)

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "consumer (${MODE}): `${cmd}` failed (${rc}):\n${out}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

# Reads a Ninja compile_commands.json written by CMake (one "key": value per line) into
# <prefix>_files (source paths) and <prefix>_<index> (their commands).
function(read_compile_commands path prefix)
  file(STRINGS ${path} lines REGEX "^  \"(command|file)\": ")
  set(files "")
  set(command "")
  foreach(line IN LISTS lines)
    if(line MATCHES "^  \"command\": \"(.*)\",?$")
      set(command "${CMAKE_MATCH_1}")
    elseif(line MATCHES "^  \"file\": \"(.*)\",?$")
      list(LENGTH files i)
      list(APPEND files "${CMAKE_MATCH_1}")
      set(${prefix}_${i} "${command}" PARENT_SCOPE)
    endif()
  endforeach()
  set(${prefix}_files "${files}" PARENT_SCOPE)
endfunction()

set(build ${WORK_DIR}/build)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(configure ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/consumer/project -B ${build} -G ${GENERATOR}
    -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_BUILD_TYPE=${BUILD_TYPE}
    "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${EXE_LINKER_FLAGS}"
    "-DCMAKE_SHARED_LINKER_FLAGS=${SHARED_LINKER_FLAGS}")
if(BUILD_TYPE)
  string(TOUPPER "${BUILD_TYPE}" build_type_upper)
  list(APPEND configure "-DCMAKE_CXX_FLAGS_${build_type_upper}=${CXX_FLAGS_CONFIG}")
endif()

if(MODE STREQUAL "package")
  run(${CMAKE_COMMAND} --install ${BINARY_DIR} --prefix ${WORK_DIR}/prefix)
  # The installed headers must stand alone: no internal (jit/) header, nothing from the source tree.
  file(GLOB_RECURSE internal ${WORK_DIR}/prefix/include/tritium/jit/*)
  if(internal)
    message(FATAL_ERROR "consumer (package): internal headers were installed: ${internal}")
  endif()
  run(${configure} -DTRITIUM_CONSUMER_MODE=package -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix)
  file(STRINGS ${build}/CMakeCache.txt tritium_dir REGEX "^Tritium_DIR:")
  if(NOT tritium_dir MATCHES "${WORK_DIR}/prefix/")
    message(FATAL_ERROR "consumer (package): find_package(Tritium) found ${tritium_dir}, not the installed package")
  endif()
elseif(MODE STREQUAL "subdirectory")
  set(manifest ${WORK_DIR}/reusable-objects.txt)
  run(${configure} -DTRITIUM_CONSUMER_MODE=subdirectory -DTRITIUM_SOURCE_DIR=${SOURCE_DIR}
      -DTRITIUM_CPU_BACKEND=${CPU_BACKEND} -DTRITIUM_CUDA_BACKEND=${CUDA_BACKEND}
      -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
      -DCMAKE_CXX_COMPILER_LAUNCHER=${SOURCE_DIR}/tests/consumer/reuse_objects.sh)
  set(ENV{TRITIUM_REUSE_MANIFEST} ${manifest})  # read by reuse_objects.sh under the build below
  # An object of Tritium's own build is reusable where the consumer's compile command for the
  # same source is the same once each build's folder is written as @BIN@, and where it is up to
  # date: Ninja's deps log of that build lists its inputs, none of them newer than it.
  set(top_files "")
  if(GENERATOR STREQUAL "Ninja" AND EXISTS ${BINARY_DIR}/compile_commands.json)
    read_compile_commands(${BINARY_DIR}/compile_commands.json top)
  endif()
  read_compile_commands(${build}/compile_commands.json sub)
  set(candidates "")
  set(compiled 0)
  list(LENGTH sub_files n)
  math(EXPR last "${n} - 1")
  foreach(i RANGE ${last})
    list(GET sub_files ${i} src)
    string(REPLACE "${build}/tritium" "@BIN@" sub_cmd "${sub_${i}}")
    if(NOT sub_cmd MATCHES " -o tritium/(CMakeFiles/tritium\\.dir/[^ ]+\\.o) ")
      continue()  # the consumer's own main.cpp
    endif()
    set(object "${CMAKE_MATCH_1}")
    string(REPLACE " -o tritium/CMakeFiles/" " -o CMakeFiles/" sub_cmd "${sub_cmd}")
    list(FIND top_files "${src}" j)
    set(top_cmd "")
    if(j GREATER_EQUAL 0)
      string(REPLACE "${BINARY_DIR}" "@BIN@" top_cmd "${top_${j}}")
    endif()
    if(top_cmd STREQUAL sub_cmd AND EXISTS ${BINARY_DIR}/${object})
      list(APPEND candidates ${object})
    else()
      math(EXPR compiled "${compiled} + 1")
    endif()
  endforeach()
  set(stale "")
  if(candidates)
    execute_process(COMMAND ${MAKE_PROGRAM} -C ${BINARY_DIR} -t deps ${candidates}
      OUTPUT_VARIABLE deps_out RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      set(stale ${candidates})
    endif()
    string(REPLACE "\n" ";" deps_lines "${deps_out}")
    set(object "")
    foreach(line IN LISTS deps_lines)
      if(line MATCHES "^([^ ].*): #deps [0-9]+, deps mtime [0-9]+ \\((VALID|STALE)\\)")
        set(object "${CMAKE_MATCH_1}")
        if(CMAKE_MATCH_2 STREQUAL "STALE")
          list(APPEND stale ${object})
        endif()
      elseif(line MATCHES "^([^ ].*): deps not found")
        list(APPEND stale ${CMAKE_MATCH_1})
      elseif(line MATCHES "^    (.+)$" AND object)
        cmake_path(ABSOLUTE_PATH CMAKE_MATCH_1 BASE_DIRECTORY ${BINARY_DIR} OUTPUT_VARIABLE input)
        if(NOT EXISTS ${input} OR ${input} IS_NEWER_THAN ${BINARY_DIR}/${object})
          list(APPEND stale ${object})
          set(object "")  # one newer input is enough
        endif()
      endif()
    endforeach()
  endif()
  set(reusable "")
  set(n_reused 0)
  foreach(object IN LISTS candidates)
    if(object IN_LIST stale)
      math(EXPR compiled "${compiled} + 1")
    else()
      string(APPEND reusable "tritium/${object} ${BINARY_DIR}/${object}\n")
      math(EXPR n_reused "${n_reused} + 1")
    endif()
  endforeach()
  file(WRITE ${manifest} "${reusable}")
  message(STATUS "consumer (subdirectory): ${n_reused} of Tritium's objects reused from ${BINARY_DIR}, ${compiled} compiled")
else()
  message(FATAL_ERROR "MODE must be package or subdirectory, not '${MODE}'")
endif()

run(${CMAKE_COMMAND} --build ${build} --target vector_add)
if(last_output MATCHES "warning")
  message(FATAL_ERROR "consumer (${MODE}): the build warned:\n${last_output}")
endif()
run(${build}/vector_add)
message(STATUS "${last_output}")
