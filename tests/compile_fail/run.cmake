# minijax compile-fail tests: compiles SOURCE (-fsyntax-only) and checks what the compiler says.
# Owns the check that a misuse stops at the library's one-line static_assert: the compile must fail,
# with EXPECT (a regular expression) in its first error, and (when ERRORS is set) exactly ERRORS
# error lines in all. With CONTROL set, the compile must succeed instead (the case's valid twin).
# -D CXX=<compiler> -D SOURCE=<file> -D ROOT=<minijax source dir> [-D EXPECT=<regex>] [-D ERRORS=<n>]
# [-D CONTROL=1]
set(args -std=c++20 -fsyntax-only -I${ROOT} -I${ROOT}/include)
# What the minijax target adds for clang >= 19 users (CMakeLists.txt: xtensor's template templates).
execute_process(COMMAND ${CXX} --version OUTPUT_VARIABLE version)
if(version MATCHES "clang")
  list(APPEND args -fno-relaxed-template-template-args -Wno-unknown-warning-option
       -Wno-deprecated-no-relaxed-template-template-args)
endif()
if(CONTROL)
  list(APPEND args -DMJ_COMPILE_FAIL_CONTROL)
endif()
execute_process(COMMAND ${CXX} ${args} ${SOURCE} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(REPLACE ";" "," all "${out}${err}")  # a list separator in CMake
if(CONTROL)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the control case of ${SOURCE} does not compile:\n${all}")
  endif()
  return()
endif()
if(rc EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled; it must not")
endif()
string(REGEX MATCHALL "[^\n]*error:[^\n]*" errors "${all}")
list(LENGTH errors n)
list(GET errors 0 first)
if(NOT first MATCHES "${EXPECT}")
  message(FATAL_ERROR "the first error of ${SOURCE} lacks \"${EXPECT}\":\n${first}\n\nall output:\n${all}")
endif()
if(DEFINED ERRORS AND NOT n EQUAL ERRORS)
  message(FATAL_ERROR "${SOURCE}: ${n} error lines, expected ${ERRORS}:\n${all}")
endif()
message(STATUS "${SOURCE}: ${n} error line(s), the first: ${first}")
