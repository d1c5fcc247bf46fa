/*
 * The static stack bound against the stack the code really uses, on x86-64: every model of the
 * project's model set (the KWS example, the operator zoo, the small conv net, the MobileNet-style
 * block) compiled in both ABIs with the default options for x86_64-linux (-O3, blocked kernels),
 * loaded like tetherd loads it (dlopen,
 * tether_module_registry), its entry called on a painted stack. The measurement starts at the
 * stack pointer of the call instruction, like the MCU firmware's trampoline (docs/mcu.md), so
 * it is the callee's own use: its frames, the return addresses, libm/libc. The report's bound
 * must be "bounded" and at least that, for every model and ABI. (tetherd's own high-water mark
 * additionally holds its call trampoline and tether_call, a few hundred bytes.)
 * The Cortex-M3 counterpart on the QEMU board is tests/mcu/test_mcu_stack.c.
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "ops_common.h"
#include "tether/compiler.h"
#include "tether/crt.h"
#include "tether/crt_posix.h"

#define STACK_SIZE (256 * 1024)

typedef struct hwm_call {
    const tether_func_entry *e;
    void *ptrs[2];
    tether_value v[2];
    int32_t codes[2];
    int32_t ret;
    uintptr_t sp; /* the stack pointer at the call instruction */
} hwm_call;

typedef int32_t (*unpacked2)(void *, void *);

/* Runs on the painted stack: reads the stack pointer, then calls the entry (both ABIs take
 * their arguments in registers, so nothing is pushed between the two). */
static __attribute__((noinline)) void on_stack(void *arg) {
    hwm_call *c = arg;
    uintptr_t sp;
#if defined(__x86_64__)
    __asm__ volatile("mov %%rsp, %0" : "=r"(sp));
#else
    sp = (uintptr_t)__builtin_frame_address(0);
#endif
    c->sp = sp;
    if (c->e->abi == TETHER_ABI_UNPACKED) {
        c->ret = ((unpacked2)(void (*)(void))c->e->fn.unpacked)(c->ptrs[0], c->ptrs[1]);
    } else {
        tether_value r;
        int32_t rc = 4;
        c->ret = c->e->fn.packed(c->v, c->codes, 2, &r, &rc, NULL);
    }
}

typedef struct row {
    const char *model;
    const char *abi;
    int64_t bound;
    bool bounded;
    size_t used;
    char path[512];
} row;

static row rows[16];
static int nrows;

static void measure(const char *model, tether_abi abi) {
    tether_ir_graph g;
    if (tt_build_model(model, false, &g) != 0) {
        fail_msg("%s: %s", model, tether_last_error());
    }
    assert_int_equal(g.ninputs, 1);
    assert_int_equal(g.noutputs, 1);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/compiler/tmp", TETHER_BINARY_DIR);
    mkdir(dir, 0755);
    snprintf(dir, sizeof dir, "%s/tests/compiler/tmp/hwm-%s-%s", TETHER_BINARY_DIR, model,
             tether_abi_name(abi));
    tether_compile_options o;
    tether_compile_options_init(&o);
    o.codegen.abi = abi;
    o.codegen.prefix = "hwm";
    o.build.target = "x86_64-linux";
    tether_compile_result res;
    if (tether_compile_graph(&g, dir, &o, &res) != 0) {
        fail_msg("%s %s: %s", model, tether_abi_name(abi), tether_last_error());
    }
    char lib[1200];
    snprintf(lib, sizeof lib, "%s/libhwm.so", dir);
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fail_msg("dlopen: %s", dlerror());
    }
    const tether_func_registry *reg = dlsym(h, "tether_module_registry");
    assert_non_null(reg);
    assert_int_equal(tether_registry_check(reg), 0);
    hwm_call c;
    memset(&c, 0, sizeof c);
    assert_int_equal(tether_registry_find(reg, "hwm_main", &c.e), 0);
    const tether_ir_tensor *tx = &g.tensors[g.inputs[0]], *ty = &g.tensors[g.outputs[0]];
    size_t nx = tether_ir_tensor_elements(tx), ny = tether_ir_tensor_elements(ty);
    float *x = malloc(nx * sizeof *x), *y = malloc(ny * sizeof *y), *ref = malloc(ny * sizeof *y);
    uint32_t seed = 5;
    tt_fill(x, nx, false, &seed);
    const float *ins[1] = {x};
    float *outs[1] = {ref};
    assert_int_equal(tether_interp_run(&g, ins, outs), 0);
    DLTensor t[2];
    memset(t, 0, sizeof t);
    t[0].data = x;
    t[0].ndim = tx->ndim;
    t[0].shape = (int64_t *)tx->shape;
    t[1].data = y;
    t[1].ndim = ty->ndim;
    t[1].shape = (int64_t *)ty->shape;
    for (int i = 0; i < 2; i++) {
        t[i].device.device_type = kDLCPU;
        t[i].dtype = TETHER_FLOAT32;
        c.v[i].v_handle = &t[i];
        c.codes[i] = TETHER_TYPE_DLTENSOR;
    }
    c.ptrs[0] = x;
    c.ptrs[1] = y;
    void *stack = aligned_alloc(16, STACK_SIZE);
    assert_non_null(stack);
    size_t used = 0;
    assert_int_equal(tether_posix_call_on_stack(stack, STACK_SIZE, on_stack, &c, &used), 0);
    assert_int_equal(c.ret, 0);
    assert_true(tt_close(y, ref, ny, 1e-5, 1e-4) <= 1.0);
    /* [stack + STACK_SIZE - used, ...) was touched; the callee's part lies below c.sp */
    uintptr_t lowest = (uintptr_t)stack + STACK_SIZE - used;
    assert_true(c.sp > lowest && c.sp <= (uintptr_t)stack + STACK_SIZE);
    row *r = &rows[nrows++];
    r->model = model;
    r->abi = tether_abi_name(abi);
    r->bound = res.build.stack.bytes;
    r->bounded = res.build.stack.bounded;
    r->used = c.sp - lowest;
    snprintf(r->path, sizeof r->path, "%s", res.build.stack.path);
    free(stack);
    free(x);
    free(y);
    free(ref);
    dlclose(h);
    tether_ir_close(&g);
    if (!r->bounded) {
        fail_msg("%s %s: static stack unbounded: %s", model, r->abi, res.build.stack.reason);
    }
    /* Under AddressSanitizer the libc string functions the kernels call (memcpy of the pad
     * kernel) are the sanitizer's interceptors, whose frames (~2 KB) are not the target libc's
     * the bound counts: there the comparison would measure the sanitizer, not the code. The
     * normal and Release trees check it. */
#if defined(__SANITIZE_ADDRESS__)
    const int sanitized = 1;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    const int sanitized = 1;
#else
    const int sanitized = 0;
#endif
#else
    const int sanitized = 0;
#endif
    if ((int64_t)r->used > r->bound && !sanitized) {
        fail_msg("%s %s: measured %zu bytes > static bound %lld (%s)", model, r->abi, r->used,
                 (long long)r->bound, r->path);
    }
    assert_true(r->used >= 8); /* at least the return address */
}

static void test_kws(void **state) {
    (void)state;
    measure("kws", TETHER_ABI_UNPACKED);
    measure("kws", TETHER_ABI_PACKED);
}

static void test_zoo(void **state) {
    (void)state;
    measure("zoo", TETHER_ABI_UNPACKED);
    measure("zoo", TETHER_ABI_PACKED);
}

static void test_convnet(void **state) {
    (void)state;
    measure("convnet", TETHER_ABI_UNPACKED);
    measure("convnet", TETHER_ABI_PACKED);
}

static void test_mobile(void **state) {
    (void)state;
    measure("mobile", TETHER_ABI_UNPACKED);
    measure("mobile", TETHER_ABI_PACKED);
}

static void test_table(void **state) {
    (void)state;
    printf("x86-64, default options: static stack bound vs measured use of the entry (bytes)\n");
    printf("  %-8s %-9s %7s %9s  worst path\n", "model", "abi", "static", "measured");
    for (int i = 0; i < nrows; i++) {
        printf("  %-8s %-9s %7lld %9zu  %s\n", rows[i].model, rows[i].abi, (long long)rows[i].bound,
               rows[i].used, rows[i].path);
    }
    assert_int_equal(nrows, 8);
}

int main(void) {
#if !defined(__x86_64__)
    printf("x86-64 only\n");
    return 77;
#endif
    const tether_target *t;
    if (tether_target_find("x86_64-linux", &t) != 0 || !tether_target_available(t)) {
        printf("gcc is not installed\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kws),    cmocka_unit_test(test_zoo),   cmocka_unit_test(test_convnet),
        cmocka_unit_test(test_mobile), cmocka_unit_test(test_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
