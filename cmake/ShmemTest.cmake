# shmem_add_mp_test(<name> <target>
#                   NPES <n>...
#                   [LAUNCHER_TIMEOUT <s>]    shmemrun's own watchdog (default 120)
#                   [TIMEOUT <s>]             ctest's watchdog (default 180)
#                   [LABELS <label>...]       default: mp
#                   [ARGS <arg>...]           arguments of the program
#                   [ENVIRONMENT <VAR=value>...]
#                   [NO_LOOPBACK_TWIN])       for a test tied to a fixture or a file of its own
#
# Adds one test per PE count, <name>.np<n>, running `shmemrun -n <n> --timeout <s> <target>`,
# and its transport twin loopback.odd.<name>.np<m> (label loopback): the same program at one PE
# count m (3 when listed, else the largest listed count from 2 to 4; none for 1-PE-only tests)
# with SHMEM_TEST_LOOPBACK=odd, so the odd PEs are reached through the transport table and every
# AMO takes the transport path; and its device twin npu.<name>.np<m> (label npu) at the same
# count with SHMEM_DEVICE=npu over the ACL stand-in (tests/acl), so the heap lives in "NPU
# memory" and every heap access of the host goes through the device's copies; and its cuda twin
# cuda.<name>.np<m> (label cuda), the same over the CUDA driver's stand-in (tests/cuda). A test
# that sets SHMEM_TEST_LOOPBACK, SHMEM_TEST_UCX or SHMEM_DEVICE itself gets no twin.
# A hang is a failure: shmemrun kills the job at its timeout, ctest at TIMEOUT. PROCESSORS is
# capped at 2 (the CI machine's cores) so ctest -j2 schedules big jobs alone; 8 PEs on 2 cores
# must work anyway (docs/architecture.md §5, Waiting).
include_guard(GLOBAL)

# shmem_test_processors(<test> <npes>): a test that runs <npes> processes asks ctest for as many
# processors, at most 2 (the CI machine's cores), so that ctest -j2 runs a big job alone.
function(shmem_test_processors test npes)
    if(npes GREATER 2)
        set(npes 2)
    endif()
    set_tests_properties(${test} PROPERTIES PROCESSORS ${npes})
endfunction()

# One twin of shmem_add_mp_test's test: <prefix>.<name>.np<twin_npes>, the same program and
# arguments with the label <label> added and the variables after it set (the caller's name,
# target, twin_npes and arg_* are read from its scope).
function(shmem_twin_ prefix label)
    set(twin ${prefix}.${name}.np${twin_npes})
    add_test(NAME ${twin}
        COMMAND $<TARGET_FILE:shmem::shmemrun> -n ${twin_npes} --timeout ${arg_LAUNCHER_TIMEOUT}
            $<TARGET_FILE:${target}> ${arg_ARGS})
    shmem_test_processors(${twin} ${twin_npes})
    set_tests_properties(${twin} PROPERTIES
        TIMEOUT ${arg_TIMEOUT}
        LABELS "${arg_LABELS};${label}"
        ENVIRONMENT "${arg_ENVIRONMENT};${ARGN}")
endfunction()

function(shmem_add_mp_test name target)
    cmake_parse_arguments(PARSE_ARGV 2 arg "NO_LOOPBACK_TWIN" "LAUNCHER_TIMEOUT;TIMEOUT"
        "NPES;LABELS;ARGS;ENVIRONMENT")
    if(arg_UNPARSED_ARGUMENTS)
        message(FATAL_ERROR "shmem_add_mp_test(${name}): unknown arguments ${arg_UNPARSED_ARGUMENTS}")
    endif()
    if(NOT arg_NPES)
        message(FATAL_ERROR "shmem_add_mp_test(${name}): NPES is required")
    endif()
    if(NOT TARGET ${target})
        message(FATAL_ERROR "shmem_add_mp_test(${name}): ${target} is not a target")
    endif()
    if(NOT DEFINED arg_LAUNCHER_TIMEOUT)
        set(arg_LAUNCHER_TIMEOUT 120)
    endif()
    if(NOT DEFINED arg_TIMEOUT)
        set(arg_TIMEOUT 180)
    endif()
    if(NOT arg_LABELS)
        set(arg_LABELS mp)
    endif()

    foreach(npes IN LISTS arg_NPES)
        set(test_name ${name}.np${npes})
        add_test(NAME ${test_name}
            COMMAND $<TARGET_FILE:shmem::shmemrun> -n ${npes} --timeout ${arg_LAUNCHER_TIMEOUT}
                $<TARGET_FILE:${target}> ${arg_ARGS})
        shmem_test_processors(${test_name} ${npes})
        set_tests_properties(${test_name} PROPERTIES
            TIMEOUT ${arg_TIMEOUT}
            LABELS "${arg_LABELS}")
        if(arg_ENVIRONMENT)
            set_tests_properties(${test_name} PROPERTIES ENVIRONMENT "${arg_ENVIRONMENT}")
        endif()
    endforeach()

    if(arg_NO_LOOPBACK_TWIN OR "${arg_ENVIRONMENT}" MATCHES "SHMEM_TEST_(LOOPBACK|UCX)=|SHMEM_DEVICE=")
        return()
    endif()
    set(twin_npes "")
    foreach(npes IN LISTS arg_NPES)
        if(npes EQUAL 3)
            set(twin_npes 3)
            break()
        elseif(npes GREATER_EQUAL 2 AND npes LESS_EQUAL 4)
            set(twin_npes ${npes})
        endif()
    endforeach()
    if(twin_npes)
        list(REMOVE_ITEM arg_LABELS loopback)
        shmem_twin_(loopback.odd loopback SHMEM_TEST_LOOPBACK=odd)
        if(TARGET cuda_standin)
            shmem_twin_(cuda cuda SHMEM_DEVICE=cuda SHMEM_CUDA_LIBRARY=$<TARGET_FILE:cuda_standin>)
        endif()
        if(TARGET acl_standin)
            shmem_twin_(npu npu SHMEM_DEVICE=npu SHMEM_ACL_LIBRARY=$<TARGET_FILE:acl_standin>)
        endif()
    endif()
endfunction()
