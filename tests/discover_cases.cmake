# minijax test discovery by case: one CTest test per parameter of a value-parameterized suite family
# (every TEST_P instance of that parameter together), as gtest_discover_tests registers one per test.
#
# Used for the conformance binary (tests/CMakeLists.txt), whose ~3,000 tests are 7 checks of each
# of ~440 cases: one process per case instead of per check saves the ~0.1 s each process spends
# loading the libraries, ~2,600 times (the suite ran in 80 s at -j2 on the 2-core machine, as 455
# CTest tests). A case's CTest test is named
# `<instantiation>/<parameter name>` (AllPrimitives/sort_rows_123) and runs
# `--gtest_filter=<instantiation>/*.*/<parameter name>`; a test of no parameter keeps its own name.
# Run as `cmake -DEXE=... -DOUT=... -DLABEL=... -DWORKDIR=... -P discover_cases.cmake` after each
# link of the binary; writes OUT, which the directory's TEST_INCLUDE_FILES includes.
execute_process(COMMAND "${EXE}" --gtest_list_tests WORKING_DIRECTORY "${WORKDIR}" OUTPUT_VARIABLE listing
                RESULT_VARIABLE rc TIMEOUT 60)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "discover_cases: ${EXE} --gtest_list_tests failed (${rc}):\n${listing}")
endif()
string(REPLACE ";" "\\;" listing "${listing}")
string(REPLACE "\n" ";" lines "${listing}")
set(suite "")
set(names "")
foreach(line IN LISTS lines)
  if(line MATCHES "^([^ #][^ ]*)\\.[ ]*(#.*)?$")
    set(suite "${CMAKE_MATCH_1}")
  elseif(line MATCHES "^  ([^ ]+)")
    set(test "${CMAKE_MATCH_1}")
    if(test MATCHES "^DISABLED_" OR suite MATCHES "(^|/)DISABLED_")
      continue()
    endif()
    set(param "")
    if(suite MATCHES "/" AND test MATCHES "/([^/]+)$")
      set(param "${CMAKE_MATCH_1}")
    endif()
    if(param)
      string(REGEX MATCH "^[^/]+" prefix "${suite}")
      set(name "${prefix}/${param}")
      set(filter "${prefix}/*.*/${param}")
    else()
      set(name "${suite}.${test}")
      set(filter "${suite}.${test}")
    endif()
    string(MAKE_C_IDENTIFIER "${name}" id)
    if(NOT DEFINED seen_${id})
      set(seen_${id} 1)
      list(APPEND names "${name}")
      set(filter_${id} "${filter}")
    endif()
  endif()
endforeach()
if(NOT names)
  message(FATAL_ERROR "discover_cases: ${EXE} --gtest_list_tests listed no tests")
endif()
# A filter that selects nothing would pass silently: gtest's "[==========] 0 tests from 0 test suites
# ran." fails the test (a test that ran and skipped prints "1 test from 1 test suite ran").
set(out "")
foreach(name IN LISTS names)
  string(MAKE_C_IDENTIFIER "${name}" id)
  string(APPEND out "add_test([==[${name}]==] \"${EXE}\" [==[--gtest_filter=${filter_${id}}]==])\n"
                    "set_tests_properties([==[${name}]==] PROPERTIES WORKING_DIRECTORY \"${WORKDIR}\" "
                    "LABELS [==[${LABEL}]==] TIMEOUT 600 FAIL_REGULAR_EXPRESSION [==[\\[==========\\] 0 tests from 0 test suites ran]==])\n")
endforeach()
file(WRITE "${OUT}" "${out}")
