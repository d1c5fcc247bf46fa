# Seconds each long test takes in the release tree of scripts/test under `ctest -j2` (from
# Testing/Temporary/CTestCostData.txt, which ctest writes after a run; refresh the table from it
# when a test's time changes much; a test trimmed since the last full run: its cost scaled by its CPU
# time after/before, measured alone). Only the order matters: ctest starts higher costs first.
# A test not listed costs 0 and starts after these. Read by ctest (tests/costs/CMakeLists.txt).
foreach(_cost
        test_compiler_ops:98 test_mcu_cli_mps2-an385:36 test_host_cli:81 test_compiler_cross:63
        test_compiler_schedules:53 test_readme:70 test_host_pool:20 test_compiler_pools:16
        test_opencl_codegen:35 test_python:29 test_host_profile:19
        test_onnx_node_packed:28 test_onnx_node_opencl:28 test_compiler_op_table:12
        test_quant_x86:55 test_onnx_node_unpacked:24 test_mcu_board_rv32-virt:20 test_style:18
        test_quant_aarch64:17 test_install:15 test_onnx_loop_c:14 test_mcu_board_mps3-an547:14
        test_mcu_board_mps2-an505:14 test_mcu_board_mps2-an385:14 test_mcu_board_mps2-an500:13
        test_mcu_board_mps2-an386:13 test_compiler_stack_hwm:13 test_opencl_quant:13
        test_cli_docs:11 test_custom_ops:11
        fuzz_compiler_model_json:11 fuzz_onnx_model:11)
    string(REPLACE ":" ";" _pair ${_cost})
    list(GET _pair 0 _name)
    list(GET _pair 1 _seconds)
    set_tests_properties(${_name} PROPERTIES COST ${_seconds})
endforeach()
