# Compares the symbols librlock.so exports (all rlock_*) with a checked-in
# list.
#   cmake -DNM=nm -DLIB=librlock.so -DLIST=rlock.symbols [-DUPDATE=ON]
#         -P check_symbols.cmake
# Fails, printing the difference, when a symbol was added (an accidental
# export, or a new function whose list entry is missing) or removed (an ABI
# break). UPDATE=ON rewrites the list from the library instead.
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
if(UPDATE)
  list(JOIN actual "\n" text)
  file(WRITE ${LIST} "${text}\n")
  list(LENGTH actual n)
  message(STATUS "wrote ${n} symbols to ${LIST}")
  return()
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
