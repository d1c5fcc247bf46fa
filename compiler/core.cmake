# compiler core (tether_compiler): model loading -> IR -> passes -> memory plan -> reference
# interpreter -> C emitter -> build driver -> artifact directory. Host only.
set(TETHER_COMPILER_SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/src/util.c
    ${CMAKE_CURRENT_LIST_DIR}/src/model/json_model.c
    ${CMAKE_CURRENT_LIST_DIR}/src/ir/ir.c
    ${CMAKE_CURRENT_LIST_DIR}/src/ir/infer.c
    ${CMAKE_CURRENT_LIST_DIR}/src/ir/shapes.c
    ${CMAKE_CURRENT_LIST_DIR}/src/ir/shapes_data.c
    ${CMAKE_CURRENT_LIST_DIR}/src/ir/shapes_dynamic.c
    ${CMAKE_CURRENT_LIST_DIR}/src/ir/types.c
    ${CMAKE_CURRENT_LIST_DIR}/src/ir/quant.c
    ${CMAKE_CURRENT_LIST_DIR}/src/ir/cost.c
    ${CMAKE_CURRENT_LIST_DIR}/src/passes/passes.c
    ${CMAKE_CURRENT_LIST_DIR}/src/passes/quant_pass.c
    ${CMAKE_CURRENT_LIST_DIR}/src/plan/memplan.c
    ${CMAKE_CURRENT_LIST_DIR}/src/interp/interp.c
    ${CMAKE_CURRENT_LIST_DIR}/src/interp/interp_types.c
    ${CMAKE_CURRENT_LIST_DIR}/src/interp/interp_formula.c
    ${CMAKE_CURRENT_LIST_DIR}/src/interp/interp_data.c
    ${CMAKE_CURRENT_LIST_DIR}/src/interp/interp_dynamic.c
    ${CMAKE_CURRENT_LIST_DIR}/src/interp/interp_loss.c
    ${CMAKE_CURRENT_LIST_DIR}/src/interp/interp_quant.c
    ${CMAKE_CURRENT_LIST_DIR}/src/codegen/emit_c.c
    ${CMAKE_CURRENT_LIST_DIR}/src/codegen/emit_c_functions.c
    ${CMAKE_CURRENT_LIST_DIR}/src/codegen/emit_c_kernels.c
    ${CMAKE_CURRENT_LIST_DIR}/src/codegen/emit_c_types.c
    ${CMAKE_CURRENT_LIST_DIR}/src/codegen/emit_c_loss.c
    ${CMAKE_CURRENT_LIST_DIR}/src/codegen/emit_c_quant.c
    ${CMAKE_CURRENT_LIST_DIR}/src/codegen/emit_c_layers.c
    ${CMAKE_CURRENT_LIST_DIR}/src/codegen/emit_c_data.c
    ${CMAKE_CURRENT_LIST_DIR}/src/codegen/emit_c_dynamic.c
    ${CMAKE_CURRENT_LIST_DIR}/src/codegen/emit_c_nchwc.c
    ${CMAKE_CURRENT_LIST_DIR}/src/codegen/emit_c_schedules.c
    ${CMAKE_CURRENT_LIST_DIR}/src/codegen/emit_c_profile.c
    ${CMAKE_CURRENT_LIST_DIR}/src/codegen/profile_meta.c
    ${CMAKE_CURRENT_LIST_DIR}/src/codegen/emit_opencl.c
    ${CMAKE_CURRENT_LIST_DIR}/src/codegen/emit_opencl_kernels.c
    ${CMAKE_CURRENT_LIST_DIR}/src/codegen/emit_opencl_gpu.c
    ${CMAKE_CURRENT_LIST_DIR}/src/codegen/opencl_textures.c
    ${CMAKE_CURRENT_LIST_DIR}/src/codegen/metadata.c
    ${CMAKE_CURRENT_LIST_DIR}/src/codegen/formula.c
    ${CMAKE_CURRENT_LIST_DIR}/src/codegen/names.c
    ${CMAKE_CURRENT_LIST_DIR}/src/codegen/workload.c
    ${CMAKE_CURRENT_LIST_DIR}/src/artifact/tuning_log.c
    ${CMAKE_CURRENT_LIST_DIR}/src/build/build.c
    ${CMAKE_CURRENT_LIST_DIR}/src/build/libframes.c
    ${CMAKE_CURRENT_LIST_DIR}/src/build/stack.c
    ${CMAKE_CURRENT_LIST_DIR}/src/build/children.c
    ${CMAKE_CURRENT_LIST_DIR}/src/build/mcu_link.c
    ${CMAKE_CURRENT_LIST_DIR}/src/artifact/compile.c
    ${CMAKE_CURRENT_LIST_DIR}/src/artifact/compile_opencl.c
    ${CMAKE_CURRENT_LIST_DIR}/src/artifact/report.c
    ${CMAKE_CURRENT_LIST_DIR}/src/cli/cli.c
    ${CMAKE_CURRENT_LIST_DIR}/src/custom/registry.c
    ${CMAKE_CURRENT_LIST_DIR}/src/custom/shape_expr.c
    ${CMAKE_CURRENT_LIST_DIR}/src/custom/contract.c
    ${CMAKE_CURRENT_LIST_DIR}/src/custom/reference.c
    ${CMAKE_CURRENT_LIST_DIR}/src/codegen/emit_c_custom.c
    ${CMAKE_CURRENT_LIST_DIR}/src/codegen/emit_opencl_custom.c
    CACHE INTERNAL "tether_compiler sources (absolute), reused by the fuzz targets")
add_library(tether_compiler STATIC ${TETHER_COMPILER_SOURCES})
target_compile_options(tether_compiler PRIVATE ${TETHER_COMPILER_WARNINGS}) # -Wswitch-enum
target_include_directories(tether_compiler PUBLIC
    $<BUILD_INTERFACE:${CMAKE_CURRENT_LIST_DIR}/include>$<INSTALL_INTERFACE:include>)
target_link_libraries(tether_compiler PUBLIC tether_crt tether_planner PRIVATE tether_crt_posix PkgConfig::CJSON
                                             ${TETHER_LIBM})
