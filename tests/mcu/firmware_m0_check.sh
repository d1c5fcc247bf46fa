#!/bin/sh
# Compiles the board-independent firmware (device/mcu/firmware) for Cortex-M0 (Armv6-M, Thumb-1
# only) with the small-part sizes (512-byte frames, 8 arrays), so that adding a Cortex-M0 board
# needs only a board folder. Exits 77 (Skipped) without arm-none-eabi-gcc.
# usage: firmware_m0_check.sh SOURCE_DIR DLPACK_INCLUDE_DIR OUT_DIR
set -eu
src=$1 dlpack=$2 out=$3
if ! command -v arm-none-eabi-gcc >/dev/null 2>&1; then
    echo "SKIP: arm-none-eabi-gcc not found; scripts/setup installs gcc-arm-none-eabi"
    exit 77
fi
mkdir -p "$out"
for f in server image syslib exports trampoline profile; do
    arm-none-eabi-gcc -mcpu=cortex-m0 -mthumb -std=c11 -Os -ffreestanding -ffunction-sections \
        -fdata-sections -Wall -Wextra -Werror -DTETHER_MCU_MAX_FRAME=512u \
        -DTETHER_MCU_MAX_ARRAYS=8u -I"$src/device/mcu/firmware" -I"$src/crt/include" \
        -I"$src/rpc/include" -I"$dlpack" -c "$src/device/mcu/firmware/$f.c" -o "$out/$f.o"
done
arm-none-eabi-size -t "$out"/*.o | tail -1 |
    awk '{print "mcu firmware (board-independent) for cortex-m0: text " $1 " data " $2 " bss " $3 " bytes"}'
