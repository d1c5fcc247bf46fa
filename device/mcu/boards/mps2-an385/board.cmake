# Board description of the Arm MPS2 AN385 (QEMU -M mps2-an385): read by device/mcu/cross.
set(TETHER_BOARD_CPU_FLAGS -mcpu=cortex-m3 -mthumb -mfloat-abi=soft)
set(TETHER_BOARD_SOURCES startup.c board.c)
set(TETHER_BOARD_LINKER_SCRIPT link.ld)
set(TETHER_BOARD_QEMU_MACHINE mps2-an385)
# Firmware sizes (device/mcu/firmware/firmware.h defaults: 1 KiB frames, 32 arrays).
set(TETHER_BOARD_DEFINES "")
