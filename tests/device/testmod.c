/*
 * Test module uploaded to tetherd by the device tests: known packed and unpacked functions,
 * plus functions that fault on purpose (crash, abort, spin, spin with SIGALRM blocked or
 * ignored, exit(0) in the middle of a call, a spinning grandchild). Exports
 * tether_module_registry (docs/abi.md). It is linked against nothing: tether_set_error resolves
 * to the symbol tetherd exports.
 */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "tether/crt/abi.h"
#include "tether/crt/error.h"
#include "tether/crt/registry.h"

#define N 16

/* packed: out[i] = a[i] + b[i] for float32 1-d tensors of equal length */
static int32_t add_packed(tether_value *args, int32_t *codes, int32_t n, tether_value *ret,
                          int32_t *ret_code, void *rh) {
    (void)ret, (void)ret_code, (void)rh;
    if (n != 3) {
        return tether_set_error(TETHER_ERR_MISMATCH, "add_packed: 3 arguments expected");
    }
    for (int i = 0; i < 3; i++) {
        if (codes[i] != TETHER_TYPE_DLTENSOR) {
            return tether_set_error(TETHER_ERR_MISMATCH, "add_packed: argument %d is not a tensor",
                                    i);
        }
        DLTensor *t = args[i].v_handle;
        if (t->dtype.code != kDLFloat || t->dtype.bits != 32 || t->dtype.lanes != 1) {
            return tether_set_error(TETHER_ERR_MISMATCH,
                                    "add_packed: argument %d: dtype must be float32", i);
        }
        if (t->ndim != 1 || t->shape[0] != ((DLTensor *)args[0].v_handle)->shape[0]) {
            return tether_set_error(TETHER_ERR_MISMATCH,
                                    "add_packed: argument %d: shape must be [n] like argument 0",
                                    i);
        }
    }
    const float *a = ((DLTensor *)args[0].v_handle)->data;
    const float *b = ((DLTensor *)args[1].v_handle)->data;
    float *o = ((DLTensor *)args[2].v_handle)->data;
    for (int64_t i = 0; i < ((DLTensor *)args[0].v_handle)->shape[0]; i++) {
        o[i] = a[i] + b[i];
    }
    return 0;
}

/* unpacked: out[i] = a[i] * b[i], 16 floats */
static int32_t mul_unpacked(const float *a, const float *b, float *o) {
    for (int i = 0; i < N; i++) {
        o[i] = a[i] * b[i];
    }
    return 0;
}

/* unpacked with 17 arguments: out[i] = sum of 16 inputs[i], 4 floats each */
static int32_t sum16(const float *a0, const float *a1, const float *a2, const float *a3,
                     const float *a4, const float *a5, const float *a6, const float *a7,
                     const float *a8, const float *a9, const float *a10, const float *a11,
                     const float *a12, const float *a13, const float *a14, const float *a15,
                     float *o) {
    const float *in[16] = {a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15};
    for (int i = 0; i < 4; i++) {
        float s = 0;
        for (int k = 0; k < 16; k++) {
            s += in[k][i];
        }
        o[i] = s;
    }
    return 0;
}

/* unpacked: uses a 64 KiB local array; out[0] = a checksum of it */
#define BIG (64 * 1024)
static int32_t big_stack(int32_t *o) {
    volatile uint8_t buf[BIG];
    for (int i = 0; i < BIG; i++) {
        buf[i] = (uint8_t)i;
    }
    int32_t s = 0;
    for (int i = 0; i < BIG; i += 4096) {
        s += buf[i];
    }
    o[0] = s;
    return 0;
}

static int32_t crash(int32_t *o) {
    volatile int32_t *volatile p = (int32_t *)(uintptr_t)(o ? 0 : 16);
    *p = 1;
    return 0;
}

static int32_t spin(int32_t *o) {
    volatile int32_t x = 0;
    for (;;) {
        x = x + (o ? 1 : 2);
    }
    return 0;
}

/* A call that defeats the session's own timer: the daemon must kill it. */
static int32_t spin_masked(int32_t *o) {
    sigset_t alrm;
    sigemptyset(&alrm);
    sigaddset(&alrm, SIGALRM);
    sigprocmask(SIG_BLOCK, &alrm, NULL);
    return spin(o);
}

static int32_t spin_ignored(int32_t *o) {
    signal(SIGALRM, SIG_IGN);
    return spin(o);
}

/* Forks a grandchild that spins, then spins itself with SIGALRM blocked: killing the session
 * must end both (the test finds them through the session's process group). */
static int32_t fork_spin(int32_t *o) {
    if (fork() == 0) {
        signal(SIGALRM, SIG_IGN);
        spin(o);
    }
    return spin_masked(o);
}

static int32_t do_exit0(int32_t *o) {
    (void)o;
    exit(0);
}

static int32_t do_abort(int32_t *o) {
    (void)o;
    abort();
}

static int32_t noop(void) {
    return 0;
}

static const tether_func_entry entries[] = {
    {"add_packed", TETHER_ABI_PACKED, 3, {.packed = add_packed}},
    {"mul_unpacked", TETHER_ABI_UNPACKED, 3, {.unpacked = (tether_unpacked_func)mul_unpacked}},
    {"sum16", TETHER_ABI_UNPACKED, 17, {.unpacked = (tether_unpacked_func)sum16}},
    {"big_stack", TETHER_ABI_UNPACKED, 1, {.unpacked = (tether_unpacked_func)big_stack}},
    {"crash", TETHER_ABI_UNPACKED, 1, {.unpacked = (tether_unpacked_func)crash}},
    {"spin", TETHER_ABI_UNPACKED, 1, {.unpacked = (tether_unpacked_func)spin}},
    {"do_abort", TETHER_ABI_UNPACKED, 1, {.unpacked = (tether_unpacked_func)do_abort}},
    {"spin_masked", TETHER_ABI_UNPACKED, 1, {.unpacked = (tether_unpacked_func)spin_masked}},
    {"spin_ignored", TETHER_ABI_UNPACKED, 1, {.unpacked = (tether_unpacked_func)spin_ignored}},
    {"fork_spin", TETHER_ABI_UNPACKED, 1, {.unpacked = (tether_unpacked_func)fork_spin}},
    {"do_exit0", TETHER_ABI_UNPACKED, 1, {.unpacked = (tether_unpacked_func)do_exit0}},
    {"noop", TETHER_ABI_UNPACKED, 0, {.unpacked = (tether_unpacked_func)noop}},
};

const tether_func_registry tether_module_registry = {entries, sizeof entries / sizeof entries[0]};
