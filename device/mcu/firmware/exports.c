/*
 * Keeps every symbol listed in exports.def in the firmware image (the table below is referenced
 * from a KEEP section, so --gc-sections cannot drop the functions), so that the addresses in the
 * generated exports.ld are real code for uploaded modules to call.
 */
#include <math.h>
#include <string.h>

#include "firmware.h"

#define TETHER_EXPORT(name) (const void *)(uintptr_t)&name,
__attribute__((used, section(".tether_exports"))) static const void *const exports[] = {
#include "exports.def"
};
