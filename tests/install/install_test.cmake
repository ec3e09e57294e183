# Installs the project into a temporary prefix, moves the installed tree (relocatability), then
# configures, builds and runs the consumer project against it with find_package(MeanShift).
# Variables: BUILD_DIR, CONSUMER_DIR, WORK, CXX, SANITIZE_FLAGS (may be empty).
cmake_minimum_required(VERSION 3.22)

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK})
run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK}/stage)
file(RENAME ${WORK}/stage ${WORK}/moved)
set(prefix ${WORK}/moved)

foreach(f include/meanshift/meanshift.hpp include/meanshift/config.hpp include/meanshift/version.hpp)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "not installed: ${f}")
  endif()
endforeach()
# A relocatable package names no build or source directory.
file(GLOB_RECURSE cmake_files ${prefix}/*.cmake)
foreach(f ${cmake_files})
  file(READ ${f} text)
  string(FIND "${text}" "${BUILD_DIR}" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "${f} refers to the build directory ${BUILD_DIR}")
  endif()
endforeach()

set(flags)
if(SANITIZE_FLAGS)
  # An instrumented libmeanshift needs an instrumented executable (ASan runtime loaded first).
  set(flags -DCMAKE_CXX_FLAGS=${SANITIZE_FLAGS} -DCMAKE_EXE_LINKER_FLAGS=${SANITIZE_FLAGS})
endif()
run("configure consumer" ${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK}/build -DCMAKE_BUILD_TYPE=Release
    -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_PREFIX_PATH=${prefix} ${flags})
run("build consumer" ${CMAKE_COMMAND} --build ${WORK}/build)
run("run example" ${WORK}/build/example)
message("${last_output}")
if(NOT last_output MATCHES "3 clusters")
  message(FATAL_ERROR "unexpected example output")
endif()
# The MPI layer: installed and linkable through meanshift::mpi when it was built (running it needs
# a launcher; tests/mpi runs the layer itself under mpirun).
if(EXISTS ${BUILD_DIR}/lib/libmeanshift_mpi.so AND NOT EXISTS ${WORK}/build/example_mpi)
  message(FATAL_ERROR "the MPI layer was built but the consumer found no meanshift::mpi")
endif()
file(REMOVE_RECURSE ${WORK})
