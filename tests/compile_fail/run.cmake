# minijax compile-fail tests: compiles SOURCE (-fsyntax-only) and checks what the compiler says.
# Owns the check that a misuse stops at the library's one-line static_assert: the compile must fail,
# with EXPECT (a regular expression) in its first error, and (when ERRORS is set) exactly ERRORS
# error lines in all. With CONTROL set, the compile must succeed instead (the case's valid twin);
# with CONTROL and PREPROCESS=<text>, only the preprocessor runs (-E), which must succeed with
# <text> in its output and no unexpanded MJ_PT_NEXT_ (for a case whose full compile is slow).
# -D CXX=<compiler> -D SOURCE=<file> -D ROOT=<minijax source dir> [-D EXPECT=<regex>] [-D ERRORS=<n>]
# [-D CONTROL=1] [-D PREPROCESS=<text>]
if(CONTROL AND DEFINED PREPROCESS)
  set(args -std=c++20 -E -P -I${ROOT} -I${ROOT}/include)
else()
  set(args -std=c++20 -fsyntax-only -I${ROOT} -I${ROOT}/include)
endif()
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
    message(FATAL_ERROR "the control case of ${SOURCE} does not compile:\n${err}")
  endif()
  if(DEFINED PREPROCESS)
    string(FIND "${out}" "${PREPROCESS}" found)
    string(FIND "${out}" "MJ_PT_NEXT_" leftover)
    if(found EQUAL -1 OR NOT leftover EQUAL -1)
      message(FATAL_ERROR "the control case of ${SOURCE}, preprocessed: \"${PREPROCESS}\" found at ${found}, "
                          "an unexpanded MJ_PT_NEXT_ at ${leftover} (-1: none)")
    endif()
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
