# minijax header staging (cmake -P): the tree of headers a program that includes <minijax/minijax.h> sees.
# Owns the install layout: public headers at minijax/<path>, the internal headers they reach at minijax/detail/<path>.
#
# -DSOURCE_DIR=<the source tree> -DOUT_DIR=<folder>: writes OUT_DIR/minijax/minijax.h (the umbrella,
# include/minijax/minijax.h), OUT_DIR/minijax/<path> for each header the umbrella includes directly
# (the public headers: what tools/list_public_api.py lists), and OUT_DIR/minijax/detail/<path> for
# every other project header they include, directly or not. Each project include (`#include
# "core/x.h"`, a path from the source tree's root) becomes `#include <minijax/core/x.h>` or
# `#include <minijax/detail/core/x.h>`, so the tree needs only OUT_DIR on the include path and an
# internal header is never found under its own name. A file is rewritten only when its text changes
# (so a build recompiles only what depends on a changed header); files no longer staged are removed.
cmake_minimum_required(VERSION 3.25)
foreach(v SOURCE_DIR OUT_DIR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "stage_headers.cmake: -D${v}=... is required")
  endif()
endforeach()

set(umbrella include/minijax/minijax.h)

# The project includes of one file: the quoted paths that name a file of the source tree.
function(project_includes file out)
  file(READ ${SOURCE_DIR}/${file} text)
  string(REGEX MATCHALL "#include \"[^\"]+\"" lines "${text}")
  set(found "")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "#include \"([^\"]+)\"" "\\1" path "${line}")
    if(EXISTS ${SOURCE_DIR}/${path})
      list(APPEND found ${path})
    endif()
  endforeach()
  set(${out} ${found} PARENT_SCOPE)
endfunction()

project_includes(${umbrella} public)
# The closure of the public headers' includes.
set(staged ${public})
set(queue ${public})
while(queue)
  list(POP_FRONT queue file)
  project_includes(${file} incs)
  foreach(inc IN LISTS incs)
    if(NOT inc IN_LIST staged)
      list(APPEND staged ${inc})
      list(APPEND queue ${inc})
    endif()
  endforeach()
endwhile()

function(staged_path file out)
  if(file STREQUAL "${umbrella}")
    set(${out} minijax/minijax.h PARENT_SCOPE)
  elseif(file IN_LIST public)
    set(${out} minijax/${file} PARENT_SCOPE)
  else()
    set(${out} minijax/detail/${file} PARENT_SCOPE)
  endif()
endfunction()

set(written "")
foreach(file ${umbrella} ${staged})
  file(READ ${SOURCE_DIR}/${file} text)
  project_includes(${file} incs)
  foreach(inc IN LISTS incs)
    staged_path(${inc} to)
    string(REPLACE "#include \"${inc}\"" "#include <${to}>" text "${text}")
  endforeach()
  staged_path(${file} dest)
  set(old "")
  if(EXISTS ${OUT_DIR}/${dest})
    file(READ ${OUT_DIR}/${dest} old)
  endif()
  if(NOT old STREQUAL text)
    file(WRITE ${OUT_DIR}/${dest} "${text}")
  endif()
  list(APPEND written ${OUT_DIR}/${dest})
endforeach()

file(GLOB_RECURSE present ${OUT_DIR}/minijax/*.h)
foreach(f IN LISTS present)
  if(NOT f IN_LIST written)
    file(REMOVE ${f})
  endif()
endforeach()
