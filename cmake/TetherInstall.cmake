# `cmake --install`: the tether and tetherd programs, the libraries as a CMake package
# (find_package(tether) -> tether::crt, tether::crt_posix, tether::rpc, tether::host,
# tether::planner, tether::compiler) and pkg-config files (tether-crt, tether-host,
# tether-compiler), the public headers, the MCU firmware builds and the docs. The installed CLI
# finds tetherd beside itself and the firmware in <prefix>/share/tether/firmware.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(_tether_libs tether_dlpack tether_crt tether_crt_posix tether_rpc_tiny tether_rpc tether_host)
foreach(t tether_planner tether_compiler)
    if(TARGET ${t})
        list(APPEND _tether_libs ${t})
    endif()
endforeach()
foreach(t ${_tether_libs})
    string(REGEX REPLACE "^tether_" "" _export ${t})
    set_target_properties(${t} PROPERTIES EXPORT_NAME ${_export})
endforeach()
install(TARGETS ${_tether_libs} EXPORT tetherTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
foreach(t tether tetherd)
    if(TARGET ${t})
        install(TARGETS ${t} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
    endif()
endforeach()
foreach(d crt/include crt/platform/posix/include rpc/include host/lib/include compiler/include
          compiler/planner/include)
    if(EXISTS ${PROJECT_SOURCE_DIR}/${d})
        install(DIRECTORY ${PROJECT_SOURCE_DIR}/${d}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
    endif()
endforeach()

if(TARGET tether_compiler) # tether/ir.h's operator table
    install(FILES ${PROJECT_SOURCE_DIR}/compiler/src/ir/ops.def
            DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tether)
endif()

install(EXPORT tetherTargets NAMESPACE tether:: FILE tetherTargets.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tether)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tetherConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/tetherConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tether)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/tetherConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/tetherConfig.cmake ${PROJECT_BINARY_DIR}/tetherConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tether)

# pkg-config: one file per layer, the Debian packages each needs as Requires.private
foreach(pc tether-crt tether-host tether-compiler)
    if(pc STREQUAL "tether-compiler" AND NOT TARGET tether_compiler)
        continue()
    endif()
    configure_file(${PROJECT_SOURCE_DIR}/cmake/${pc}.pc.in ${PROJECT_BINARY_DIR}/${pc}.pc @ONLY)
    install(FILES ${PROJECT_BINARY_DIR}/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()

# firmware builds, in the layout the CLI searches (<prefix>/share/tether/firmware/<board>)
if(TETHER_WITH_MCU)
    foreach(board ${TETHER_MCU_BOARDS_BUILT})
        install(FILES ${TETHER_MCU_FW_DIR_${board}}/tether-fw.elf
                      ${TETHER_MCU_FW_DIR_${board}}/firmware.json
                      ${TETHER_MCU_FW_DIR_${board}}/module.ld
                      ${TETHER_MCU_FW_DIR_${board}}/exports.ld
                DESTINATION ${CMAKE_INSTALL_DATADIR}/tether/firmware/${board})
    endforeach()
endif()
if(TETHER_WITH_AARCH64_TETHERD)
    install(PROGRAMS ${TETHER_AARCH64_TETHERD} DESTINATION ${CMAKE_INSTALL_DATADIR}/tether/aarch64
            RENAME tetherd)
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/LICENSE
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
