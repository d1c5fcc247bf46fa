# tether_add_test(NAME SOURCES src... [LIBS lib...] [LABELS label...] [TIMEOUT s] [ARGS arg...])
#
# Builds one cmocka test executable and registers it with ctest. Every test carries at least one
# label (unit, integration, conformance, mcu, opencl) so `ctest -L unit` runs a subset. A test that
# cannot run on this machine exits 77, which ctest reports as "Skipped" (never as passed).
#
# TETHER_TEST_SKIP (a regular expression over test names, empty by default): the tests it matches
# are not registered and their executables are left out of `all` (the target exists, so the
# folders' target_* calls on it still work, and `cmake --build --target NAME` builds it). The
# sanitizer tree of scripts/test passes its skip lists, so it does not compile and link what it
# never runs.
set(TETHER_TEST_SKIP "" CACHE STRING "Regular expression: tests not registered nor built by all")
function(tether_add_test name)
    cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LIBS;LABELS;ARGS" ${ARGN})
    if(NOT T_LABELS)
        message(FATAL_ERROR "tether_add_test(${name}): LABELS is required")
    endif()
    if(NOT TETHER_TEST_SKIP STREQUAL "" AND name MATCHES "${TETHER_TEST_SKIP}")
        add_executable(${name} EXCLUDE_FROM_ALL ${T_SOURCES})
        target_link_libraries(${name} PRIVATE ${T_LIBS} PkgConfig::CMOCKA)
        target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests/common)
        target_compile_definitions(${name} PRIVATE
            TETHER_SOURCE_DIR="${PROJECT_SOURCE_DIR}" TETHER_BINARY_DIR="${PROJECT_BINARY_DIR}")
        return()
    endif()
    add_executable(${name} ${T_SOURCES})
    target_link_libraries(${name} PRIVATE ${T_LIBS} PkgConfig::CMOCKA)
    target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests/common)
    target_compile_definitions(${name} PRIVATE
        TETHER_SOURCE_DIR="${PROJECT_SOURCE_DIR}" TETHER_BINARY_DIR="${PROJECT_BINARY_DIR}")
    add_test(NAME ${name} COMMAND ${name} ${T_ARGS})
    if(NOT T_TIMEOUT)
        set(T_TIMEOUT 120)
    endif()
    # every tetherd a test starts keeps its upload cache in the build tree, one per test, not in
    # the user's ~/.cache (docs/tetherd.md)
    set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT}
        SKIP_RETURN_CODE 77
        ENVIRONMENT "TETHER_UPLOAD_CACHE=${PROJECT_BINARY_DIR}/test-upload-cache/${name}")
endfunction()
