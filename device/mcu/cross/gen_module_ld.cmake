# Writes module.ld, exports.ld and firmware.json for RAM-upload modules of one firmware build.
#   exports.ld  one absolute symbol per name in exports.def, at its address in the firmware
#               (Thumb functions keep bit 0 set, as in the ELF symbol table)
#   firmware.json  board, QEMU binary and machine, core, features (HELLO cpu_features), clock,
#               CPU flags, load region, file names and export addresses
#               (for hosts that link modules: tether compile --upload)
#   module.ld   memory = the firmware's load region; a 32-byte image header first (see
#               docs/mcu.md), then code, read-only data, data; .bss after the uploaded bytes
#   exports_id  (in firmware.json) identity of the export addresses, also reported by HELLO
#   channel_select  (in firmware.json, firmware with the semihosting byte channel only: the CMSDK
#               boards' drivers/channel.c) address of the two words that select it at boot,
#               read by scripts/qemu-board --semihost-serial
# Usage: cmake -DREADELF=... -DELF=... -DEXPORTS=exports.def -DBOARD=... -DOUT=dir -P gen_module_ld.cmake
# readelf (not nm): its values keep bit 0 of Thumb functions, which callers need.
execute_process(COMMAND ${READELF} -sW ${ELF} OUTPUT_VARIABLE sym_out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${READELF} -s ${ELF} failed")
endif()
string(REPLACE "\n" ";" sym_lines "${sym_out}")
foreach(line ${sym_lines})
    if(line MATCHES "^ *[0-9]+: ([0-9a-fA-F]+) +[0-9]+ +[A-Z]+ +GLOBAL +[A-Z]+ +[A-Z0-9]+ +([A-Za-z0-9_.]+)$")
        set(addr_${CMAKE_MATCH_2} ${CMAKE_MATCH_1})
    endif()
endforeach()

foreach(s __tether_load_start __tether_load_end)
    if(NOT DEFINED addr_${s})
        message(FATAL_ERROR "${ELF} has no symbol ${s} (the board linker script must define it)")
    endif()
endforeach()
math(EXPR load_start "0x${addr___tether_load_start}" OUTPUT_FORMAT HEXADECIMAL)
math(EXPR load_size "0x${addr___tether_load_end} - 0x${addr___tether_load_start}")

# TETHER_EXPORT_ARM lines only for Arm firmware (TOOLCHAIN arm-none-eabi), in exports.def order
if(TOOLCHAIN STREQUAL "arm-none-eabi")
    file(STRINGS ${EXPORTS} export_lines REGEX "^TETHER_EXPORT(_ARM)?\\(")
else()
    file(STRINGS ${EXPORTS} export_lines REGEX "^TETHER_EXPORT\\(")
endif()
set(json_exports "")
set(id_text "")
set(exports "/* Firmware symbols for RAM-upload modules of the ${BOARD} firmware (generated from
 * device/mcu/firmware/exports.def; do not edit). */\n")
foreach(line ${export_lines})
    string(REGEX REPLACE "^TETHER_EXPORT(_ARM)?\\(([A-Za-z0-9_]+)\\).*" "\\2" name "${line}")
    if(NOT DEFINED addr_${name})
        message(FATAL_ERROR "exported symbol ${name} is missing from ${ELF}")
    endif()
    # libgcc's helpers (TETHER_EXPORT_ARM) reach exports.ld only on boards that ask for them
    # (LINK_HELPERS, board.cmake: a small load region); elsewhere a module links its own copy,
    # which it calls without a long-branch veneer. The exports id covers every export.
    if(NOT line MATCHES "^TETHER_EXPORT_ARM" OR LINK_HELPERS)
        string(APPEND exports "${name} = 0x${addr_${name}};\n")
    endif()
    string(TOLOWER "${addr_${name}}" addr_lower)
    string(APPEND id_text "${addr_lower}\n")
    if(json_exports)
        string(APPEND json_exports ",\n")
    endif()
    string(APPEND json_exports "    \"${name}\": \"0x${addr_${name}}\"")
endforeach()
file(WRITE ${OUT}/exports.ld "${exports}")
# exports_id: first 4 bytes of the SHA-256 of the address lines; the firmware computes the same
# at boot (firmware/exports.c) and reports it in HELLO, so a host can check that this
# firmware.json describes the firmware it talks to.
string(SHA256 id_hash "${id_text}")
string(SUBSTRING "${id_hash}" 0 8 exports_id)

file(WRITE ${OUT}/module.ld "/*
 * Linker script for tether RAM-upload modules of the ${BOARD} firmware (generated; do not edit).
 * Load region: ${load_start}, ${load_size} bytes. Link with
 *   ${TOOLCHAIN}-gcc <cpu flags> -nostdlib -Wl,--gc-sections -T module.ld -T exports.ld obj... -lgcc
 * then upload the output of `${TOOLCHAIN}-objcopy -O binary`. The module must define
 *   const tether_func_registry tether_module_registry;
 */
MEMORY
{
    LOAD (rwx) : ORIGIN = ${load_start}, LENGTH = ${load_size}
}
ENTRY(tether_module_registry)
SECTIONS
{
    .tether_header :
    {
        LONG(0x52485454)                              /* magic \"TTHR\" */
        LONG(1)                                       /* header version */
        LONG(ORIGIN(LOAD))                            /* link address */
        LONG(__tether_image_end - ORIGIN(LOAD))       /* bytes uploaded */
        LONG(__tether_bss_start)                      /* .bss address */
        LONG(__tether_bss_end - __tether_bss_start)   /* .bss bytes */
        LONG(tether_module_registry)                  /* registry address */
        LONG(0)                                       /* reserved */
    } > LOAD
    .text :
    {
        *(.text .text.*)
        *(.rodata .rodata.*)
        . = ALIGN(4);
    } > LOAD
    .ARM.exidx :
    {
        *(.ARM.exidx* .gnu.linkonce.armexidx.*)
    } > LOAD
    .data :
    {
        *(.data .data.*)
        . = ALIGN(4);
        __tether_image_end = .;
    } > LOAD
    .bss (NOLOAD) :
    {
        __tether_bss_start = .;
        *(.bss .bss.* COMMON)
        . = ALIGN(4);
        __tether_bss_end = .;
    } > LOAD
    /DISCARD/ : { *(.comment) *(.ARM.attributes) *(.note*) }
}
")
message(STATUS "${BOARD}: module.ld (load region ${load_start}, ${load_size} bytes) and exports.ld written")

# firmware.json: everything a host needs to link and upload modules for this firmware.
set(cpu_flags "${CPU_FLAGS}")
set(json_channel "")
if(DEFINED addr_tether_mcu_channel_select)
    set(json_channel "  \"channel_select\": \"0x${addr_tether_mcu_channel_select}\",\n")
endif()
file(WRITE ${OUT}/firmware.json "{
  \"format\": \"tether-mcu-firmware\",
  \"version\": 1,
  \"board\": \"${BOARD}\",
  \"toolchain\": \"${TOOLCHAIN}\",
  \"qemu\": \"${QEMU}\",
  \"qemu_machine\": \"${QEMU_MACHINE}\",
  \"core\": \"${CORE}\",
  \"features\": \"${FEATURES}\",
  \"clock_hz\": ${CLOCK_HZ},
  \"firmware\": \"tether-fw.elf\",
  \"cpu_flags\": \"${cpu_flags}\",
  \"load_addr\": \"${load_start}\",
  \"load_size\": ${load_size},
  \"exports_id\": \"0x${exports_id}\",
  \"module_ld\": \"module.ld\",
  \"exports_ld\": \"exports.ld\",
${json_channel}  \"exports\": {
${json_exports}
  }
}
")
