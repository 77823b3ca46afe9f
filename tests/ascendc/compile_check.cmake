# ctest ascendc.compile: the kernel-side API's AscendC architecture (shmem/arch/ascendc.h)
# compiles, with the host C++ compiler in -fsyntax-only mode, against the declaration-only
# stand-in of AscendC's kernel_operator.h in this folder, in AscendC's CPU-debug mode
# (__CCE_KT_TEST__, which selects the architecture in shmem/arch.h).
#
#   cmake -DCXX=<c++> -DSRC=<source tree> -P compile_check.cmake
#
# Checked, each on its own:
# - the AscendC sources (tests/ascendc/*.cpp: shmem/device.h alone, every API family from
#   `__global__ __aicore__` kernels; examples/ascendc/*.cpp), warnings as errors, twice: with
#   __gm__ empty as in AscendC's CPU-debug mode, and with __gm__ defined as `volatile`, so that
#   a global-memory pointer that loses its qualifier (passed or assigned where a plain pointer
#   is expected, which bisheng refuses between address spaces) is an error here too;
# - every C source (and C++ one, outside examples/ascendc/) of examples/, tests/device/ and
#   bench/ that includes shmem/device.h, compiled as C++ (the architecture is C++); these are
#   C programs, so C's implicit conversion of void *
#   is accepted (-fpermissive) and warnings are off, their kernels being CPU-launched functions
#   that only compile in this mode, never for an AI core;
# - tests/device/with_host_header.c must fail, with the header's message that says to split
#   the kernel-side and host headers.
# Every file is compiled even after a failure; the check fails when any did.
cmake_minimum_required(VERSION 3.25)

if(NOT CXX OR NOT SRC)
    message(FATAL_ERROR "compile_check.cmake: pass -DCXX=<c++ compiler> -DSRC=<source tree>")
endif()

set(common -std=c++17 -fsyntax-only -D__CCE_KT_TEST__
    -I${SRC}/tests/ascendc -I${SRC}/device/include)
set(host_includes -I${SRC}/cpp/include -I${SRC}/examples/common -I${SRC}/bench)

file(GLOB ascendc_sources ${SRC}/tests/ascendc/*.cpp ${SRC}/examples/ascendc/*.cpp)
file(GLOB_RECURSE c_candidates ${SRC}/examples/*.c ${SRC}/examples/*.cc ${SRC}/tests/device/*.c
    ${SRC}/tests/device/*.cc ${SRC}/bench/*.c)
set(c_sources)
foreach(src IN LISTS c_candidates)
    file(READ ${src} text)
    if(text MATCHES "#include <shmem/device.h>" AND NOT src MATCHES "/with_host_header\\.c$")
        list(APPEND c_sources ${src})
    endif()
endforeach()

set(failed)
set(checked 0)
function(compile_one src expect_ok)
    cmake_parse_arguments(PARSE_ARGV 2 arg "" "" "FLAGS")
    execute_process(COMMAND ${CXX} ${common} ${arg_FLAGS} ${src}
        RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
    file(RELATIVE_PATH rel ${SRC} ${src})
    if(arg_FLAGS MATCHES "__gm__=volatile")
        string(APPEND rel " (__gm__ as volatile)")
    endif()
    if(expect_ok AND rc EQUAL 0)
        message(STATUS "ok      ${rel}")
    elseif(NOT expect_ok AND NOT rc EQUAL 0 AND err MATCHES "declare the same CANN names")
        message(STATUS "ok      ${rel} (refused, as it must be)")
    else()
        message(STATUS "FAILED  ${rel} (exit ${rc})\n${out}${err}")
        set(failed ${failed} ${rel} PARENT_SCOPE)
    endif()
    math(EXPR n "${checked} + 1")
    set(checked ${n} PARENT_SCOPE)
endfunction()

foreach(src IN LISTS ascendc_sources)
    compile_one(${src} TRUE FLAGS -Wall -Wextra -Werror)
    compile_one(${src} TRUE FLAGS -Wall -Wextra -Werror -D__gm__=volatile)
endforeach()
foreach(src IN LISTS c_sources)
    compile_one(${src} TRUE FLAGS ${host_includes} -fpermissive -w -x c++)
endforeach()
compile_one(${SRC}/tests/device/with_host_header.c FALSE FLAGS ${host_includes} -x c++)

list(LENGTH ascendc_sources n_ascendc)
list(LENGTH c_sources n_c)
if(n_ascendc LESS 3 OR n_c LESS 8)
    message(FATAL_ERROR "ascendc.compile: found ${n_ascendc} AscendC and ${n_c} C kernel sources "
        "under ${SRC}: fewer than the tree holds, the globs are wrong")
endif()
if(failed)
    message(FATAL_ERROR "ascendc.compile: ${checked} files checked, these failed: ${failed}")
endif()
message(STATUS "ascendc.compile: ${checked} files checked for the AscendC architecture")
