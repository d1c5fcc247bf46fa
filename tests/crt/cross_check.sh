#!/bin/sh
# Compiles every crt core source for Cortex-M0 (thumb, freestanding, -Werror) and prints the code
# size. Exits 77 (ctest: Skipped) with a message when arm-none-eabi-gcc is not installed.
# usage: cross_check.sh CRT_DIR DLPACK_INCLUDE_DIR OUT_DIR SOURCE...
set -eu
crt=$1 dlpack=$2 out=$3
shift 3
if ! command -v arm-none-eabi-gcc >/dev/null 2>&1; then
    echo "SKIP: arm-none-eabi-gcc not found; scripts/setup installs gcc-arm-none-eabi"
    exit 77
fi
mkdir -p "$out"
objs=""
for src in "$@"; do
    obj="$out/$(basename "$src" .c).o"
    arm-none-eabi-gcc -mcpu=cortex-m0 -mthumb -ffreestanding -std=c11 -Os -Wall -Wextra -Werror \
        -I"$crt/include" -I"$dlpack" -c "$crt/$src" -o "$obj"
    objs="$objs $obj"
done
# Undefined symbols may only be platform hooks or the freestanding string/compiler helpers.
defined=$(arm-none-eabi-nm --defined-only $objs | awk 'NF==3{print $3}' | sort -u)
undefined=$(arm-none-eabi-nm -u $objs | awk 'NF==2{print $2}' | sort -u |
    grep -v -x -F "$defined" | grep -v -E '^(tether_platform_|memcpy$|memset$|memmove$|memcmp$|strlen$|strcmp$|strncmp$|__aeabi_|__gnu_thumb1_case)' || true)
if [ -n "$undefined" ]; then
    echo "crt core needs symbols a freestanding target does not have:"
    echo "$undefined"
    exit 1
fi
arm-none-eabi-size -t $objs | tail -1 | awk '{print "crt core for cortex-m0: text " $1 " data " $2 " bss " $3 " bytes"}'
