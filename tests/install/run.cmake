# minijax consumer test driver (run by CTest with cmake -P): builds and runs tests/install/consumer, and
# checks that its program naming an internal header does not compile.
# MODE=install: `cmake --install` the build tree into WORK_DIR/prefix, then find_package(minijax);
# MODE=subdirectory: add_subdirectory(MINIJAX_SOURCE_DIR) (ccache makes the library rebuild cheap).
foreach(v MODE MINIJAX_SOURCE_DIR MINIJAX_BINARY_DIR WORK_DIR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run.cmake: -D${v}=... is required")
  endif()
endforeach()

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(consumer_src ${CMAKE_CURRENT_LIST_DIR}/consumer)
set(args -DCMAKE_BUILD_TYPE=Release -DMINIJAX_CONSUMER_MODE=${MODE})

if(MODE STREQUAL "install")
  execute_process(COMMAND ${CMAKE_COMMAND} --install ${MINIJAX_BINARY_DIR} --prefix ${WORK_DIR}/prefix
                  OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
  list(APPEND args -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix)
elseif(MODE STREQUAL "subdirectory")
  list(APPEND args -DMINIJAX_SOURCE_DIR=${MINIJAX_SOURCE_DIR})
  find_program(CCACHE_PROGRAM ccache)
  if(CCACHE_PROGRAM)
    list(APPEND args -DCMAKE_CXX_COMPILER_LAUNCHER=${CCACHE_PROGRAM} -DCMAKE_C_COMPILER_LAUNCHER=${CCACHE_PROGRAM})
  endif()
else()
  message(FATAL_ERROR "run.cmake: MODE must be install or subdirectory, got '${MODE}'")
endif()

# A sanitizer build of minijax (tests/CMakeLists.txt sets these for the install consumer): the same
# compiler and -fsanitize flags, so the sanitizer's runtime is linked into the consumer.
if(DEFINED ENV{MINIJAX_CONSUMER_SANITIZE} AND NOT "$ENV{MINIJAX_CONSUMER_SANITIZE}" STREQUAL "")
  list(APPEND args -DCMAKE_CXX_COMPILER=$ENV{MINIJAX_CONSUMER_CXX} -DCMAKE_C_COMPILER=$ENV{MINIJAX_CONSUMER_CC}
       "-DCMAKE_CXX_FLAGS=-fsanitize=$ENV{MINIJAX_CONSUMER_SANITIZE}"
       "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=$ENV{MINIJAX_CONSUMER_SANITIZE}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -S ${consumer_src} -B ${WORK_DIR}/build ${args}
                COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/build --target consumer -j 2
                COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND ${WORK_DIR}/build/consumer RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "consumer (${MODE}) exited with ${rc}")
endif()
message(STATUS "consumer (${MODE}) built and ran")

# A program naming an internal header (<minijax/core/jaxpr.h>) must not compile: the compiler stops at
# the missing header, never building a program against the library's internals.
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/build --target internal_header
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "internal_header (${MODE}) compiled: <minijax/core/jaxpr.h> is reachable by a user program")
endif()
if(NOT "${out}${err}" MATCHES "minijax/core/jaxpr\\.h'?:? (No such file or directory|file not found)")
  message(FATAL_ERROR "internal_header (${MODE}) failed, but not at the missing header:\n${out}${err}")
endif()
message(STATUS "internal_header (${MODE}) did not compile: <minijax/core/jaxpr.h> not found")
