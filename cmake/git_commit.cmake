# SPDX-License-Identifier: BSD-3-Clause
# Writes OUT, a header defining RLOCK_GIT_COMMIT for `rlock --version`: the
# abbreviated commit SRC has checked out (`git rev-parse --short HEAD`), or
# "" when SRC is not the top of a git checkout (a tarball, a copy, a tree
# inside someone else's repository), git is missing, or git refuses.
# OUT is rewritten only when its text changes, so a build after a new
# commit recompiles the one file that includes it, and otherwise nothing.
#   cmake -DSRC=<source dir> -DOUT=<header> [-DGIT=<git>] -P git_commit.cmake
# CMakeLists.txt runs it at configure time and, in a git checkout, at
# every build too.
cmake_minimum_required(VERSION 3.18)
set(commit "")
if(GIT AND EXISTS "${SRC}/.git")
  execute_process(COMMAND "${GIT}" -C "${SRC}" rev-parse --show-toplevel
                  OUTPUT_VARIABLE top RESULT_VARIABLE rc_top
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  execute_process(COMMAND "${GIT}" -C "${SRC}" rev-parse --short HEAD
                  OUTPUT_VARIABLE head RESULT_VARIABLE rc_head
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  get_filename_component(top "${top}" REALPATH)
  get_filename_component(src "${SRC}" REALPATH)
  if(rc_top EQUAL 0 AND rc_head EQUAL 0 AND top STREQUAL src AND
     head MATCHES "^[0-9a-f]+$")
    set(commit "${head}")
  endif()
endif()
string(CONCAT text "/* Written by cmake/git_commit.cmake; do not edit. */\n"
       "#define RLOCK_GIT_COMMIT \"${commit}\"\n")
set(old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
