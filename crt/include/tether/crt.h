/*
 * tether crt: the freestanding runtime core shared by device builds and generated code.
 *
 * Include this one header. crt uses only freestanding C (stdint, stddef, stdbool, stdarg,
 * string.h for memcpy/memset) plus DLPack's header, never allocates with malloc, and
 * cross-compiles for Cortex-M0. Everything that touches an OS or hardware goes through the
 * hooks of tether/crt/platform.h. Module map:
 *   error.h     status codes, last-error message, tether_format
 *   dtype.h     DLDataType helpers
 *   scope.h     storage scopes and pool names
 *   texture.h   N-d -> 2D image flattening and the image resource contract
 *   alloc.h     LIFO workspace allocator, first-fit heap
 *   ndarray.h   DLTensor + scope + pool
 *   abi.h       packed / unpacked calling conventions
 *   registry.h  name -> function table and the generic call
 *   stack.h     stack painting and high-water measurement
 *   platform.h  clock, cycles, abort, log hooks
 */
#ifndef TETHER_CRT_H
#define TETHER_CRT_H

#include "tether/crt/error.h"
#include "tether/crt/dtype.h"
#include "tether/crt/scope.h"
#include "tether/crt/texture.h"
#include "tether/crt/alloc.h"
#include "tether/crt/ndarray.h"
#include "tether/crt/abi.h"
#include "tether/crt/registry.h"
#include "tether/crt/stack.h"
#include "tether/crt/platform.h"
#include "tether/crt/utf8.h"

#endif /* TETHER_CRT_H */
