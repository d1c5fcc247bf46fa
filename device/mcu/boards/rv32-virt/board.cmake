# Board folder of QEMU's RISC-V virt machine, 32-bit (qemu-system-riscv32 -M virt -bios none),
# read by device/mcu/cross. Identity, QEMU machine and compiler flags are in the board table
# (../boards.txt).
set(TETHER_BOARD_SOURCES board.c)
set(TETHER_BOARD_DRIVERS riscv_startup.c riscv_mtime.c ns16550.c)
set(TETHER_BOARD_LINKER_SCRIPT link.ld)
# Firmware sizes (device/mcu/firmware/firmware.h defaults: 1 KiB frames, 32 arrays).
set(TETHER_BOARD_DEFINES "")
