/*
 * tether crt: status codes and the last-error message.
 *
 * Every crt function that can fail returns an int status: TETHER_OK (0) or a negative
 * tether_status. On failure it also records a human message, readable with tether_last_error()
 * until the next failing call on the same thread. The message buffer is fixed-size
 * (TETHER_ERROR_MSG_MAX bytes, always NUL-terminated, truncated when longer) and formatted by
 * tether_format(), a small printf subset that needs no libc and never allocates.
 *
 * Thread model: hosted builds keep one buffer per thread; freestanding builds (MCUs) have one.
 */
#ifndef TETHER_CRT_ERROR_H
#define TETHER_CRT_ERROR_H

#include <stdarg.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tether_status {
    TETHER_OK = 0,
    TETHER_ERR_INVALID_ARG = -1,   /* a parameter is malformed (null, negative, bad name) */
    TETHER_ERR_OUT_OF_MEMORY = -2, /* a pool or allocator has no room for the request */
    TETHER_ERR_UNSUPPORTED = -3,   /* well-formed but not supported (strided tensor, C=3 image) */
    TETHER_ERR_LIMIT = -4,         /* over a stated limit (texture width, max ndim, max args) */
    TETHER_ERR_NOT_FOUND = -5,     /* unknown name (scope, dtype, function, pool) */
    TETHER_ERR_MISMATCH = -6,      /* shape, dtype, ndim or ABI differ from what is expected */
    TETHER_ERR_ALIGNMENT = -7,     /* a pointer or size violates the required alignment */
    TETHER_ERR_STATE = -8,         /* call out of order (LIFO violation, double free) */
    TETHER_ERR_IO = -9,            /* transport or file error */
    TETHER_ERR_TIMEOUT = -10,      /* a deadline passed */
    TETHER_ERR_PROTOCOL = -11,     /* malformed or unexpected message on the wire */
    TETHER_ERR_AUTH = -12,         /* authentication required or failed */
    TETHER_ERR_CRASHED = -13,      /* the callee faulted (signal, hard fault) */
    TETHER_ERR_INTERNAL = -14,     /* a broken invariant inside tether: a bug */
    TETHER_ERR_BUSY = -15,         /* a device is held by another process (serial port lock) */
} tether_status;

/* Maximum length of the last-error message including the terminating NUL. */
#define TETHER_ERROR_MSG_MAX 256

/* Short stable name of a status ("TETHER_ERR_LIMIT"); "TETHER_ERR_UNKNOWN" for others. */
const char *tether_status_name(int status);

/* Records `status` and a formatted message (tether_format syntax); returns `status` so that
 * callers can write `return tether_set_error(TETHER_ERR_LIMIT, "...", ...);`. */
int tether_set_error(int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The message of the most recent failure on this thread ("" when none). */
const char *tether_last_error(void);

/* The status of the most recent tether_set_error on this thread (TETHER_OK when none). */
int tether_last_status(void);

/* Forgets the last error. */
void tether_clear_error(void);

/*
 * Formats into buf (size > 0; always NUL-terminated) and returns the length the full output
 * would have had, like snprintf. Supported: %s %c %d %i %u %x %X %p %%, the length modifiers
 * hh h l ll z, a field width and '-' / '0' flags, and %.Ns precision for strings.
 * Floating point is not supported (an 'f' conversion prints "?") to keep MCU code small.
 */
size_t tether_format(char *buf, size_t size, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
size_t tether_vformat(char *buf, size_t size, const char *fmt, va_list ap);

#ifdef __cplusplus
}
#endif
#endif /* TETHER_CRT_ERROR_H */
