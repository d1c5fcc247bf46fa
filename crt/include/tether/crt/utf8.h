/*
 * tether crt: UTF-8 checks for text that goes into XML, JSON or a terminal (operator and tensor
 * names from model files, device strings). Pure functions, freestanding.
 */
#ifndef TETHER_CRT_UTF8_H
#define TETHER_CRT_UTF8_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The length (1 to 4) of the well-formed UTF-8 sequence that starts s (at most n bytes are
 * looked at), or 0 when s starts with a byte that is not one (a stray continuation byte, an
 * overlong form, a surrogate, past U+10FFFF, cut short). n == 0 gives 0. */
size_t tether_utf8_seq(const char *s, size_t n);

/* The longest prefix of s (NUL-terminated) of at most max bytes that ends on a character
 * boundary: what to keep when text is shortened. */
size_t tether_utf8_cut(const char *s, size_t max);

#ifdef __cplusplus
}
#endif
#endif /* TETHER_CRT_UTF8_H */
