/*
 * MPS2 AN385 register map used by the board code: Cortex-M3 system control space (SCB, SysTick,
 * NVIC) and the CMSDK APB UART0. Only what startup.c and board.c touch.
 */
#ifndef TETHER_AN385_REGS_H
#define TETHER_AN385_REGS_H

#include <stdint.h>

#define REG32(addr) (*(volatile uint32_t *)(uintptr_t)(addr))

/* System control block. */
#define SCB_ICSR              REG32(0xE000ED04u)
#define SCB_AIRCR             REG32(0xE000ED0Cu)
#define SCB_CCR               REG32(0xE000ED14u)
#define SCB_SHCSR             REG32(0xE000ED24u)
#define SCB_CFSR              REG32(0xE000ED28u)
#define SCB_HFSR              REG32(0xE000ED2Cu)
#define SCB_MMFAR             REG32(0xE000ED34u)
#define SCB_BFAR              REG32(0xE000ED38u)
#define SCB_AIRCR_VECTKEY     (0x05FAu << 16)
#define SCB_AIRCR_SYSRESETREQ (1u << 2)
#define SCB_CCR_DIV_0_TRP     (1u << 4)
#define SCB_SHCSR_MEMFAULTENA (1u << 16)
#define SCB_SHCSR_BUSFAULTENA (1u << 17)
#define SCB_SHCSR_USGFAULTENA (1u << 18)

/* MPU (PMSAv7). */
#define MPU_CTRL            REG32(0xE000ED94u)
#define MPU_RNR             REG32(0xE000ED98u)
#define MPU_RBAR            REG32(0xE000ED9Cu)
#define MPU_RASR            REG32(0xE000EDA0u)
#define MPU_CTRL_ENABLE     (1u << 0)
#define MPU_CTRL_PRIVDEFENA (1u << 2)
#define MPU_RASR_ENABLE     (1u << 0)
#define MPU_RASR_SIZE(log2) ((uint32_t)((log2)-1u) << 1)
#define MPU_RASR_XN         (1u << 28)

/* SysTick: 24-bit down counter on the processor clock. */
#define SYST_CSR           REG32(0xE000E010u)
#define SYST_RVR           REG32(0xE000E014u)
#define SYST_CVR           REG32(0xE000E018u)
#define SYST_CSR_ENABLE    (1u << 0)
#define SYST_CSR_TICKINT   (1u << 1)
#define SYST_CSR_CLKSOURCE (1u << 2)
#define SYST_CSR_COUNTFLAG (1u << 16)
#define SYST_MAX           0x00FFFFFFu

/* NVIC. */
#define NVIC_ISER0  REG32(0xE000E100u)
#define NVIC_IPR(n) (*(volatile uint8_t *)(uintptr_t)(0xE000E400u + (n)))
#define SCB_SHPR3   REG32(0xE000ED20u)

/* CMSDK APB UART0. */
#define UART0_BASE           0x40004000u
#define UART_DATA            REG32(UART0_BASE + 0x00u)
#define UART_STATE           REG32(UART0_BASE + 0x04u)
#define UART_CTRL            REG32(UART0_BASE + 0x08u)
#define UART_INTSTATUS       REG32(UART0_BASE + 0x0Cu) /* write 1 to clear (INTCLEAR) */
#define UART_BAUDDIV         REG32(UART0_BASE + 0x10u)
#define UART_STATE_TXFULL    (1u << 0)
#define UART_STATE_RXFULL    (1u << 1)
#define UART_STATE_TXOVR     (1u << 2)
#define UART_STATE_RXOVR     (1u << 3)
#define UART_CTRL_TXEN       (1u << 0)
#define UART_CTRL_RXEN       (1u << 1)
#define UART_CTRL_RXINTEN    (1u << 3)
#define UART_CTRL_RXOVRINTEN (1u << 5)
#define UART_INT_RX          (1u << 1)
#define UART_INT_RXOVR       (1u << 3)

/* Interrupt numbers (QEMU hw/arm/mps2.c, AN385 application note). */
#define AN385_IRQ_UART0_RX      0
#define AN385_IRQ_UART_OVERFLOW 12

#define AN385_SYSCLK_HZ 25000000u
#define AN385_UART_BAUD 115200u

#endif /* TETHER_AN385_REGS_H */
