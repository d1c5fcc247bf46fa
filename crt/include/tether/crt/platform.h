/*
 * tether crt: platform hooks, the only way crt reaches the outside world.
 *
 * crt's core calls these and defines none of them. crt/platform/posix defines all of them as weak
 * symbols (so a test or an embedder may override one); each MCU board folder defines them for its
 * hardware (SysTick, UART). Hooks must be safe to call before any crt state is set up.
 */
#ifndef TETHER_CRT_PLATFORM_H
#define TETHER_CRT_PLATFORM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tether_log_level {
    TETHER_LOG_ERROR = 0,
    TETHER_LOG_WARN = 1,
    TETHER_LOG_INFO = 2,
    TETHER_LOG_DEBUG = 3,
} tether_log_level;

/* Monotonic time in nanoseconds since an arbitrary origin. */
uint64_t tether_platform_time_ns(void);

/* A free-running cycle counter and its rate in Hz (0 when the platform has none; callers then
 * use tether_platform_time_ns). */
uint64_t tether_platform_cycles(void);
uint64_t tether_platform_cycles_hz(void);

/* Stops the program after an unrecoverable error. Never returns. */
void tether_platform_abort(int status)
#if defined(__GNUC__)
    __attribute__((noreturn))
#endif
    ;

/* Writes one log line (no trailing newline in msg). */
void tether_platform_log(tether_log_level level, const char *msg);

/* Formats (tether_format syntax, bounded buffer) and passes the line to the log hook when level
 * <= the current threshold (default TETHER_LOG_INFO). */
void tether_log(tether_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void tether_log_set_level(tether_log_level level);
tether_log_level tether_log_get_level(void);

#ifdef __cplusplus
}
#endif
#endif /* TETHER_CRT_PLATFORM_H */
