# SPDX-License-Identifier: BSD-3-Clause
# Compares the symbols librlock.so exports (all rlock_*) with a checked-in
# list.
#   cmake -DNM=nm -DLIB=librlock.so -DLIST=rlock.symbols [-DUPDATE=ON]
#         [-DDEBIAN=debian/librlock0.symbols -DVERSION=x.y.z]
#         -P check_symbols.cmake
# Fails, printing the difference, when a symbol was added (an accidental
# export, or a new function whose list entry is missing) or removed (an ABI
# break). UPDATE=ON rewrites the list from the library instead. With
# DEBIAN, the Debian symbols file must name the same symbols (checked), and
# UPDATE rewrites it too: symbols it had keep their version, new ones get
# VERSION, the release that introduces them.
cmake_minimum_required(VERSION 3.18)
execute_process(COMMAND ${NM} -D --defined-only ${LIB}
                OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} -D --defined-only ${LIB} failed (${rc})")
endif()
string(REPLACE "\n" ";" lines "${out}")
set(actual)
# Every defined dynamic symbol counts, not only rlock_* ones (a helper
# from a statically linked dependency leaking out is an accidental export
# too), except what some linkers define in every shared object.
set(linker_symbols _init _fini _edata _end __bss_start)
foreach(line IN LISTS lines)
  # "ADDRESS TYPE NAME[@VERSION]"
  if(line MATCHES "^[0-9a-fA-F]* +[A-Za-z] +([A-Za-z0-9_.]+)")
    set(name ${CMAKE_MATCH_1})
    if(NOT name IN_LIST linker_symbols)
      list(APPEND actual ${name})
    endif()
  endif()
endforeach()
list(REMOVE_DUPLICATES actual)
list(SORT actual)
# The Debian symbols file: header lines, then " NAME@Base VERSION".
set(deb_header)
set(deb_names)
if(DEBIAN)
  file(STRINGS ${DEBIAN} deb_lines)
  foreach(line IN LISTS deb_lines)
    if(line MATCHES "^ ([A-Za-z0-9_.]+)@Base ([^ ]+)")
      list(APPEND deb_names ${CMAKE_MATCH_1})
      set(deb_ver_${CMAKE_MATCH_1} ${CMAKE_MATCH_2})
    else()
      list(APPEND deb_header "${line}")
    endif()
  endforeach()
endif()
if(UPDATE)
  list(JOIN actual "\n" text)
  file(WRITE ${LIST} "${text}\n")
  list(LENGTH actual n)
  message(STATUS "wrote ${n} symbols to ${LIST}")
  if(DEBIAN)
    list(JOIN deb_header "\n" text)
    foreach(name IN LISTS actual)
      if(NOT DEFINED deb_ver_${name})
        set(deb_ver_${name} ${VERSION})
      endif()
      string(APPEND text "\n ${name}@Base ${deb_ver_${name}}")
    endforeach()
    file(WRITE ${DEBIAN} "${text}\n")
    message(STATUS "wrote ${n} symbols to ${DEBIAN}")
  endif()
  return()
endif()
if(DEBIAN)
  list(SORT deb_names)
  if(NOT deb_names STREQUAL actual)
    message(FATAL_ERROR "${DEBIAN} does not list exactly the exported "
            "symbols: run `cmake --build BUILD --target rlock_update_symbols`"
            " and commit both lists.")
  endif()
endif()
file(STRINGS ${LIST} expected)
list(SORT expected)
set(added ${actual})
list(REMOVE_ITEM added ${expected})
set(removed ${expected})
list(REMOVE_ITEM removed ${actual})
if(added OR removed)
  set(msg "librlock.so's exports differ from ${LIST}:\n")
  foreach(s IN LISTS removed)
    string(APPEND msg "- ${s}   (no longer exported: an ABI break)\n")
  endforeach()
  foreach(s IN LISTS added)
    string(APPEND msg "+ ${s}   (newly exported)\n")
  endforeach()
  string(APPEND msg "If the change is deliberate (and keeps the ABI policy in "
         "CMakeLists.txt), run `cmake --build BUILD --target rlock_update_symbols` "
         "and commit the list.")
  message(FATAL_ERROR "${msg}")
endif()
list(LENGTH actual n)
message(STATUS "${n} exported symbols match ${LIST}")
