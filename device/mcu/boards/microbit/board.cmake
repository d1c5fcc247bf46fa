# Board folder of the BBC micro:bit (QEMU -M microbit: nRF51822, Cortex-M0, 16 KiB RAM), read by
# device/mcu/cross. Identity, QEMU machine and compiler flags are in the board table
# (../boards.txt).
set(TETHER_BOARD_SOURCES board.c uart.c)
set(TETHER_BOARD_DRIVERS cortex_m_startup.c systick.c)
set(TETHER_BOARD_LINKER_SCRIPT link.ld)
# Sized for 16 KiB of RAM: 512-byte frames (the host sends 464-byte chunks), 4 arrays.
set(TETHER_BOARD_DEFINES TETHER_MCU_MAX_FRAME=512u TETHER_MCU_MAX_ARRAYS=4u)
# Modules call the firmware's libgcc helpers (soft float, division) instead of carrying their
# own: about 3 KiB less per module, which the 3.5 KiB load region needs.
set(TETHER_BOARD_LINK_HELPERS ON)
