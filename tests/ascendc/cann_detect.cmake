# ctest ascendc.cann_detect: how the build finds CANN (cmake/Ascend.cmake, scripts/build.sh
# -cann), with a fake CANN whose bisheng records its command line and writes its output.
#
#   cmake -DSRC=<source tree> -DWORK=<scratch dir> -P cann_detect.cmake
#
# - ASCEND_HOME_PATH unset: configure says "CANN not found (ASCEND_HOME_PATH unset): NPU
#   kernels are not built" once and builds nothing;
# - set, with bisheng under compiler/ccec_compiler/bin: the kernels are built the custom-op way
#   (-xcce, --cce-aicore-arch=dav-c220-vec, -shared, CANN's tikcfw include folders, the
#   kernel-side headers) into lib<name>.so;
# - set, without bisheng: the message names where it was looked for;
# - SHMEM_BUILD_CANN=ON without CANN: configure fails naming `source <CANN>/set_env.sh`;
# - scripts/build.sh -cann without ASCEND_HOME_PATH: stops at once with the same advice.
cmake_minimum_required(VERSION 3.25)

if(NOT SRC OR NOT WORK)
    message(FATAL_ERROR "cann_detect.cmake: pass -DSRC=<source tree> -DWORK=<scratch dir>")
endif()
file(REMOVE_RECURSE ${WORK})
# A project of one kernel library through cmake/Ascend.cmake.
set(project ${WORK}/project)
file(WRITE ${project}/CMakeLists.txt [=[
cmake_minimum_required(VERSION 3.25)
project(shmem_cann_detect LANGUAGES NONE)
include(${SHMEM_SOURCE_DIR}/cmake/Ascend.cmake)
shmem_add_ascendc_kernels(detect_kernels SOURCES ${SHMEM_SOURCE_DIR}/tests/ascendc/api.cpp)
]=])
set(failures)

# configure(<name> <expect: ok|fail> <regex the output must match> [ENV var=value...])
function(configure name expect regex)
    cmake_parse_arguments(PARSE_ARGV 3 arg "" "" "ENV;ARGS")
    execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=ASCEND_HOME_PATH ${arg_ENV}
            ${CMAKE_COMMAND} -S ${project} -B ${WORK}/${name} -G Ninja -DSHMEM_SOURCE_DIR=${SRC}
            ${arg_ARGS}
        RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
    set(last_output "${out}${err}" PARENT_SCOPE)
    set(ok TRUE)
    if((expect STREQUAL "ok") AND NOT rc EQUAL 0)
        set(ok FALSE)
    elseif((expect STREQUAL "fail") AND rc EQUAL 0)
        set(ok FALSE)
    elseif(NOT "${out}${err}" MATCHES "${regex}")
        set(ok FALSE)
    endif()
    if(ok)
        message(STATUS "ok      configure ${name}")
    else()
        message(STATUS "FAILED  configure ${name}: exit ${rc}, wanted ${expect} and /${regex}/:\n${out}${err}")
        set(failures ${failures} ${name} PARENT_SCOPE)
    endif()
endfunction()

# No CANN: one message, nothing to build.
configure(none ok "CANN not found \\(ASCEND_HOME_PATH unset\\): NPU kernels are not built")
string(REGEX MATCHALL "CANN not found" seen "${last_output}")
list(LENGTH seen n_seen)
file(READ ${WORK}/none/build.ninja none_rules)
if(NOT n_seen EQUAL 1 OR none_rules MATCHES "libdetect_kernels")
    list(APPEND failures "none(${n_seen} messages, or a rule for the kernels)")
endif()

# A fake CANN: bisheng writes its arguments, one a line, and creates its -o file.
set(cann ${WORK}/cann)
file(MAKE_DIRECTORY ${cann}/compiler/ccec_compiler/bin)
file(WRITE ${cann}/compiler/ccec_compiler/bin/bisheng [=[#!/bin/sh
out=
prev=
for a in "$@"; do
    printf '%s\n' "$a" >> "$(dirname "$0")/args.txt"
    [ "$prev" = -o ] && out=$a
    prev=$a
done
[ -n "$out" ] && : > "$out"
]=])
file(CHMOD ${cann}/compiler/ccec_compiler/bin/bisheng PERMISSIONS OWNER_READ OWNER_WRITE
    OWNER_EXECUTE)
configure(fake ok "CANN: .*NPU kernels built with .*/bisheng for dav-c220-vec"
    ENV ASCEND_HOME_PATH=${cann})
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK}/fake RESULT_VARIABLE rc
    OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
set(args "")
if(EXISTS ${cann}/compiler/ccec_compiler/bin/args.txt)
    file(STRINGS ${cann}/compiler/ccec_compiler/bin/args.txt args)
endif()
foreach(want -xcce --cce-aicore-arch=dav-c220-vec -shared -std=c++17 -I${SRC}/device/include
        -I${cann}/compiler/tikcpp/tikcfw -I${cann}/compiler/tikcpp/tikcfw/impl
        -I${cann}/compiler/tikcpp/tikcfw/interface -I${cann}/include
        ${SRC}/tests/ascendc/api.cpp)
    if(NOT want IN_LIST args)
        list(APPEND failures "build.fake(no ${want})")
    endif()
endforeach()
if(NOT rc EQUAL 0 OR NOT EXISTS ${WORK}/fake/libdetect_kernels.so)
    list(APPEND failures "build.fake(exit ${rc}, no libdetect_kernels.so)")
    message(STATUS "FAILED  build fake:\n${out}${err}")
else()
    message(STATUS "ok      build fake: bisheng ${args}")
endif()

# ASCEND_HOME_PATH set, no bisheng there nor on PATH.
file(MAKE_DIRECTORY ${WORK}/empty)
configure(empty ok "CANN not found \\(no bisheng under .*/empty/compiler/ccec_compiler/bin nor on PATH\\)"
    ENV ASCEND_HOME_PATH=${WORK}/empty PATH=/usr/bin:/bin)

# CANN required, none there.
configure(required fail "CANN not found \\(ASCEND_HOME_PATH unset\\): run `source[ \n]+<CANN>/set_env.sh`"
    ARGS -DSHMEM_BUILD_CANN=ON)

# build.sh -cann checks before it does anything else.
execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=ASCEND_HOME_PATH
        ${SRC}/scripts/build.sh -cann --build-dir ${WORK}/never
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
if(rc EQUAL 0 OR NOT err MATCHES "-cann: ASCEND_HOME_PATH is not set: run 'source <CANN>/set_env.sh'"
        OR EXISTS ${WORK}/never)
    list(APPEND failures "build.sh-cann(exit ${rc})")
    message(STATUS "FAILED  build.sh -cann without ASCEND_HOME_PATH:\n${out}${err}")
else()
    message(STATUS "ok      build.sh -cann without ASCEND_HOME_PATH: ${err}")
endif()

file(REMOVE_RECURSE ${WORK})
if(failures)
    message(FATAL_ERROR "ascendc.cann_detect: failed: ${failures}")
endif()
