# Board folder of the Arm MPS3 AN547 (QEMU -M mps3-an547, Cortex-M55 with Helium), read by device/mcu/cross.
# Identity, QEMU machine and compiler flags are in the board table (../boards.txt).
set(TETHER_BOARD_SOURCES board.c)
set(TETHER_BOARD_DRIVERS cortex_m_startup.c systick.c cmsdk_uart.c arm_semihost.c channel.c)
set(TETHER_BOARD_LINKER_SCRIPT link.ld)
# Firmware sizes (device/mcu/firmware/firmware.h defaults: 1 KiB frames, 32 arrays).
set(TETHER_BOARD_DEFINES "")
