/*
 * Register map of the Arm Cortex-M system control space shared by the board drivers of this
 * folder: SCB, SysTick, NVIC, the PMSAv7 MPU and the FPU's CPACR. Only what the drivers touch.
 * These addresses are the same on every Cortex-M core (Armv6-M to Armv8.1-M); registers that a
 * core lacks (fault status on Armv6-M, PMSAv7 on Armv8-M) are only used under the #if of the
 * architecture that has them.
 */
#ifndef TETHER_CORTEX_M_H
#define TETHER_CORTEX_M_H

#include <stdint.h>

#define REG32(addr) (*(volatile uint32_t *)(uintptr_t)(addr))

/* Armv7-M and later (Thumb-2): configurable fault exceptions, fault status registers. */
#if defined(__ARM_ARCH_ISA_THUMB) && __ARM_ARCH_ISA_THUMB >= 2
#define TETHER_CM_THUMB2 1
#else
#define TETHER_CM_THUMB2 0
#endif
/* Armv8-M Mainline and Armv8.1-M: the stack limit register MSPLIM, the PMSAv8 MPU. */
#if defined(__ARM_ARCH_8M_MAIN__) || defined(__ARM_ARCH_8_1M_MAIN__)
#define TETHER_CM_V8M 1
#else
#define TETHER_CM_V8M 0
#endif

/* System control block. */
#define SCB_ICSR              REG32(0xE000ED04u)
#define SCB_VTOR              REG32(0xE000ED08u)
#define SCB_AIRCR             REG32(0xE000ED0Cu)
#define SCB_CCR               REG32(0xE000ED14u)
#define SCB_SHPR3             REG32(0xE000ED20u)
#define SCB_SHCSR             REG32(0xE000ED24u)
#define SCB_CFSR              REG32(0xE000ED28u)
#define SCB_HFSR              REG32(0xE000ED2Cu)
#define SCB_MMFAR             REG32(0xE000ED34u)
#define SCB_BFAR              REG32(0xE000ED38u)
#define SCB_CPACR             REG32(0xE000ED88u)
#define SCB_AIRCR_VECTKEY     (0x05FAu << 16)
#define SCB_AIRCR_SYSRESETREQ (1u << 2)
#define SCB_CCR_DIV_0_TRP     (1u << 4)
#define SCB_SHCSR_MEMFAULTENA (1u << 16)
#define SCB_SHCSR_BUSFAULTENA (1u << 17)
#define SCB_SHCSR_USGFAULTENA (1u << 18)

/* MPU (PMSAv7: Armv7-M). */
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
#define SYST_MAX           0x00FFFFFFu

/* NVIC. */
#define NVIC_ISER(n) REG32(0xE000E100u + 4u * (n))
#define NVIC_IPR(n)  REG32(0xE000E400u + 4u * ((n) / 4u))

#endif /* TETHER_CORTEX_M_H */
