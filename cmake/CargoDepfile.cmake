# cmake -DOUTPUT=<file> -DTARGETS=<a|b> -DINPUTS=<dep-info|...> -P CargoDepfile.cmake
#
# Merges cargo's dep-info files (one per final artifact, Makefile syntax, absolute paths) into
# one depfile whose rule names every output of the cargo custom command, first output first,
# as Ninja requires. Escapes in the prerequisite lists are kept byte for byte.
foreach(_var IN ITEMS OUTPUT TARGETS INPUTS)
    if(NOT DEFINED ${_var})
        message(FATAL_ERROR "CargoDepfile.cmake: -D${_var}=... is required")
    endif()
endforeach()
# '|' separates the lists: a ';' would not survive the custom command's VERBATIM quoting.
string(REPLACE "|" ";" TARGETS "${TARGETS}")
string(REPLACE "|" ";" INPUTS "${INPUTS}")

set(_prereqs "")
foreach(_in IN LISTS INPUTS)
    if(NOT EXISTS "${_in}")
        message(FATAL_ERROR "CargoDepfile.cmake: cargo did not write ${_in}")
    endif()
    file(STRINGS "${_in}" _lines)
    foreach(_line IN LISTS _lines)
        # "target...: prereq...": keep what follows the first ": " (paths never contain ": ").
        string(FIND "${_line}" ": " _colon)
        if(_colon GREATER_EQUAL 0)
            math(EXPR _start "${_colon} + 2")
            string(SUBSTRING "${_line}" ${_start} -1 _deps)
            string(STRIP "${_deps}" _deps)
            if(NOT _deps STREQUAL "")
                string(APPEND _prereqs " ${_deps}")
            endif()
        endif()
    endforeach()
endforeach()

string(REPLACE ";" " " _targets "${TARGETS}")
file(WRITE "${OUTPUT}.tmp" "${_targets}:${_prereqs}\n")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
