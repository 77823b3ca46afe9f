# What every operator project's CMakeLists.txt shares, included after its project():
# shmem's CMake package (unless built in-tree), the CBLAS lookup (cblas.cmake), and
#   shmem_op_program(<op> [CBLAS])
#       the program <op>_op from <op>.c, linked with shmem::device (and CBLAS when asked), with
#       examples/common on its include path (op_util.h). Without CBLAS where it is asked for, it
#       says so and sets SHMEM_OP_SKIPPED, and the caller returns.
#   shmem_op_run_tests(<op> TIMEOUT <s> ARGS <run.sh arguments>...)
#       with tests on: op.<op>.np2 and .np4, run.sh (golden data, the run, the check) at 2 and 4
#       PEs under the freshly built shmemrun.
if(NOT TARGET shmem::device)
    find_package(shmem 0.1 CONFIG REQUIRED)
endif()
include(${CMAKE_CURRENT_LIST_DIR}/cblas.cmake)

function(shmem_op_program op)
    cmake_parse_arguments(PARSE_ARGV 1 arg "CBLAS" "" "")
    set(SHMEM_OP_SKIPPED FALSE PARENT_SCOPE)
    if(arg_CBLAS AND NOT SHMEM_OP_CBLAS_FOUND)
        message(STATUS "${op}: skipped, no CBLAS found (Debian: apt-get install libopenblas-dev)")
        set(SHMEM_OP_SKIPPED TRUE PARENT_SCOPE)
        return()
    endif()
    add_executable(${op}_op ${op}.c)
    target_include_directories(${op}_op PRIVATE ${CMAKE_CURRENT_FUNCTION_LIST_DIR})
    target_link_libraries(${op}_op PRIVATE shmem::device)
    if(arg_CBLAS)
        target_link_libraries(${op}_op PRIVATE shmem_op_cblas m)
    endif()
endfunction()

function(shmem_op_run_tests op)
    cmake_parse_arguments(PARSE_ARGV 1 arg "" "TIMEOUT" "ARGS")
    if(NOT (SHMEM_BUILD_TESTS AND TARGET shmem::shmemrun))
        return()
    endif()
    foreach(npes 2 4)
        add_test(NAME op.${op}.np${npes}
            COMMAND ${CMAKE_COMMAND} -E env SHMEMRUN=$<TARGET_FILE:shmem::shmemrun>
                ${CMAKE_CURRENT_SOURCE_DIR}/run.sh -ranks ${npes} ${arg_ARGS}
                -bin $<TARGET_FILE:${op}_op>)
        set_tests_properties(op.${op}.np${npes} PROPERTIES TIMEOUT ${arg_TIMEOUT}
            LABELS "example;mp;device" PROCESSORS 2)
    endforeach()
endfunction()
