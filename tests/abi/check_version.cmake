# SPDX-License-Identifier: BSD-3-Clause
# The version is defined in include/rlock/version.h; the build (CMake's
# project version, the SONAME, rlock.pc, the CMake package) and the Python
# package read it from there. A few files must name it again, where
# nothing can read it for them; this script fails, naming the file, when
# one of them names another version:
#   - debian/changelog: the newest entry's version (dpkg reads it; the
#     package build also refuses a changelog behind version.h);
#   - CHANGELOG.md: the newest released section, "## [X.Y.Z] - DATE"
#     ("## [Unreleased]" above it is left out);
#   - docs/rlock.1: the .TH line's "rlock X.Y.Z";
#   - debian/*.symbols: each symbol names the release that introduced it,
#     so none may name a release after this version, except the next minor
#     release: functions added since the last release (CHANGELOG.md's
#     "Unreleased") name the release they will first be in, which adds
#     functions and so is a minor one.
#   cmake -DROOT=<source tree> -P check_version.cmake
cmake_minimum_required(VERSION 3.18)
file(STRINGS ${ROOT}/include/rlock/version.h lines
     REGEX "^#define RLOCK_VERSION_(MAJOR|MINOR|PATCH) [0-9]+$")
foreach(line IN LISTS lines)
  string(REGEX MATCH "RLOCK_VERSION_([A-Z]+) ([0-9]+)" _ "${line}")
  set(_${CMAKE_MATCH_1} ${CMAKE_MATCH_2})
endforeach()
if(NOT DEFINED _MAJOR OR NOT DEFINED _MINOR OR NOT DEFINED _PATCH)
  message(FATAL_ERROR "include/rlock/version.h defines no MAJOR.MINOR.PATCH")
endif()
set(version ${_MAJOR}.${_MINOR}.${_PATCH})
set(errors)

# expect(FILE REGEX WHAT): FILE's first line matching REGEX (whose first
# group is a version) names this version.
function(expect file regex what)
  if(NOT EXISTS ${ROOT}/${file})
    return()
  endif()
  file(STRINGS ${ROOT}/${file} found REGEX "${regex}" LIMIT_COUNT 1)
  if(NOT found MATCHES "${regex}")
    set(errors "${errors}\n  ${file}: no ${what}" PARENT_SCOPE)
  elseif(NOT CMAKE_MATCH_1 STREQUAL version)
    set(errors "${errors}\n  ${file}: ${what} is ${CMAKE_MATCH_1}" PARENT_SCOPE)
  endif()
endfunction()

expect(debian/changelog "^rlock \\(([^)]+)\\)" "the newest entry's version")
expect(CHANGELOG.md "^## \\[([0-9][^]]*)\\]" "the newest released section's version")
expect(docs/rlock.1 "^\\.TH .*\"rlock ([^\"]+)\"" "the .TH line's version")

math(EXPR _next_minor "${_MINOR} + 1")
set(next ${_MAJOR}.${_next_minor}.0)
file(GLOB symbols ${ROOT}/debian/*.symbols)
foreach(f IN LISTS symbols)
  file(STRINGS ${f} entries REGEX "^ [^ ]+ [0-9]")
  foreach(entry IN LISTS entries)
    string(REGEX MATCH "^ ([^ ]+) ([^ ]+)" _ "${entry}")
    if(CMAKE_MATCH_2 VERSION_GREATER version AND
       NOT CMAKE_MATCH_2 VERSION_EQUAL next)
      file(RELATIVE_PATH rel ${ROOT} ${f})
      string(APPEND errors "\n  ${rel}: ${CMAKE_MATCH_1} names ${CMAKE_MATCH_2}")
    endif()
  endforeach()
endforeach()

if(errors)
  message(FATAL_ERROR "include/rlock/version.h says ${version}, but:${errors}\n"
          "A release changes them together (CHANGELOG.md, debian/changelog, "
          "the man page's .TH line).")
endif()
message(STATUS "version ${version}: debian/changelog, CHANGELOG.md, "
        "docs/rlock.1 and the symbols files agree")
