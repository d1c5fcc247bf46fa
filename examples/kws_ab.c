/*
 * A/B of the two ABIs on the example keyword-spotting model, all on this machine: compiles the
 * model with the unpacked and the packed ABI for x86-64 (and Cortex-M3 when arm-none-eabi-gcc is
 * installed), runs each x86-64 library through its module registry on a painted stack, and
 * prints one table: outputs vs the reference interpreter, text/data/bss, static worst-case stack,
 * measured stack high-water mark, latency. The remote version of the same table (tetherd) is
 * scripts/demo's job; this program is its local half.
 * usage: kws_ab MODEL.json OUT_DIR [repeats]
 * Exit code 0 only if both ABIs reproduce the interpreter's output.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tether/compiler.h"
#include "tether/crt.h"
#include "tether/crt_posix.h"

typedef struct variant {
    tether_compile_result x86, m3;
    int have_m3;
    float out[64];
    double max_err;
    size_t hwm;
    double latency_us;
    int ok;
} variant;

typedef struct call_ctx {
    const tether_func_entry *fn;
    tether_value *args;
    int32_t *codes;
    int32_t n;
    int32_t ret;
    int status;
    int repeats;
} call_ctx;

static void run_calls(void *p) {
    call_ctx *c = p;
    for (int i = 0; i < c->repeats; i++) {
        c->status = tether_call(c->fn, c->args, c->codes, c->n, &c->ret);
    }
}

static int compile(const char *model, const char *dir, tether_abi abi, const char *target,
                   tether_compile_result *res) {
    tether_compile_options o;
    tether_compile_options_init(&o);
    o.codegen.abi = abi;
    o.codegen.prefix = "kws";
    o.build.target = target;
    if (tether_compile_model(model, dir, &o, res) != 0) {
        fprintf(stderr, "kws_ab: %s\n", tether_last_error());
        return -1;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: kws_ab MODEL.json OUT_DIR [repeats]\n");
        return 2;
    }
    const char *model = argv[1], *out = argv[2];
    int repeats = argc > 3 ? atoi(argv[3]) : 200;
    repeats = repeats < 1 ? 1 : repeats;
    mkdir(out, 0755);
    tether_ir_graph g;
    if (tether_model_load(model, &g) != 0) {
        fprintf(stderr, "kws_ab: %s\n", tether_last_error());
        return 1;
    }
    const tether_ir_tensor *xt = &g.tensors[g.inputs[0]], *yt = &g.tensors[g.outputs[0]];
    size_t nin = tether_ir_tensor_elements(xt), nout = tether_ir_tensor_elements(yt);
    if (g.ninputs != 1 || g.noutputs != 1 || nout > 64) {
        fprintf(stderr, "kws_ab: expects one input and one output of at most 64 values\n");
        return 1;
    }
    float *x = malloc(nin * sizeof(float)), ref[64];
    for (size_t i = 0; i < nin; i++) {
        x[i] = sinf((float)i * 0.37f) * 0.8f; /* a fixed, speech-like feature pattern */
    }
    const float *ins[1] = {x};
    float *refs[1] = {ref};
    tether_interp_run(&g, ins, refs);
    const tether_target *m3;
    int have_m3 = tether_target_find("cortex-m3", &m3) == 0 && tether_target_available(m3);
    variant v[2];
    memset(v, 0, sizeof v);
    size_t stack_size = 256 * 1024;
    void *stack = aligned_alloc(16, stack_size);
    for (int abi = 0; abi < 2; abi++) {
        tether_abi a = abi == 0 ? TETHER_ABI_UNPACKED : TETHER_ABI_PACKED;
        char dir[1024];
        snprintf(dir, sizeof dir, "%s/x86_64-%s", out, tether_abi_name(a));
        if (compile(model, dir, a, "x86_64-linux", &v[abi].x86) != 0) {
            return 1;
        }
        if (have_m3) {
            snprintf(dir, sizeof dir, "%s/cortex-m3-%s", out, tether_abi_name(a));
            if (compile(model, dir, a, "cortex-m3", &v[abi].m3) != 0) {
                return 1;
            }
            v[abi].have_m3 = 1;
        }
        char lib[1200];
        snprintf(lib, sizeof lib, "%s/x86_64-%s/%s", out, tether_abi_name(a),
                 v[abi].x86.build.library);
        void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
        const tether_func_registry *reg = h ? dlsym(h, "tether_module_registry") : NULL;
        call_ctx c = {0};
        if (!reg || tether_registry_check(reg) != 0 ||
            tether_registry_find(reg, v[abi].x86.entry, &c.fn) != 0) {
            fprintf(stderr, "kws_ab: cannot load %s\n", lib);
            return 1;
        }
        DLTensor t[2] = {{0}};
        t[0].data = x;
        t[0].ndim = xt->ndim;
        t[0].shape = (int64_t *)xt->shape;
        t[1].data = v[abi].out;
        t[1].ndim = yt->ndim;
        t[1].shape = (int64_t *)yt->shape;
        t[0].dtype = t[1].dtype = TETHER_FLOAT32;
        tether_value args[2] = {{.v_handle = &t[0]}, {.v_handle = &t[1]}};
        int32_t codes[2] = {TETHER_TYPE_DLTENSOR, TETHER_TYPE_DLTENSOR};
        c.args = args;
        c.codes = codes;
        c.n = 2;
        c.repeats = 1;
        if (tether_posix_call_on_stack(stack, stack_size, run_calls, &c, &v[abi].hwm) != 0 ||
            c.status != 0 || c.ret != 0) {
            fprintf(stderr, "kws_ab: call failed: %s\n", tether_last_error());
            return 1;
        }
        c.repeats = repeats;
        uint64_t t0 = tether_platform_time_ns();
        tether_posix_call_on_stack(stack, stack_size, run_calls, &c, NULL);
        v[abi].latency_us = (double)(tether_platform_time_ns() - t0) / 1e3 / repeats;
        for (size_t i = 0; i < nout; i++) {
            double d = fabs((double)v[abi].out[i] - ref[i]);
            v[abi].max_err = d > v[abi].max_err ? d : v[abi].max_err;
        }
        v[abi].ok = v[abi].max_err < 1e-5;
        dlclose(h);
    }
    int best = 0;
    for (size_t i = 1; i < nout; i++) {
        best = ref[i] > ref[best] ? (int)i : best;
    }
    printf("model %s: %d operators after passes, params %zu bytes, workspace %lld bytes\n", g.name,
           v[0].x86.nnodes_out, v[0].x86.params_bytes, (long long)v[0].x86.workspace_size);
    printf("%-34s %18s %18s\n", "", "unpacked ABI", "packed ABI");
    printf("%-34s %18s %18s\n", "outputs equal the interpreter", v[0].ok ? "yes" : "NO",
           v[1].ok ? "yes" : "NO");
    printf("%-34s %18.2g %18.2g\n", "  max |difference|", v[0].max_err, v[1].max_err);
    printf("%-34s %18d %18d\n", "  predicted class (interpreter)", best, best);
    const char *tg[2] = {"x86-64", "cortex-m3"};
    for (int k = 0; k < 2; k++) {
        if (k == 1 && !have_m3) {
            printf("cortex-m3: arm-none-eabi-gcc not installed\n");
            break;
        }
        const tether_compile_result *r0 = k ? &v[0].m3 : &v[0].x86;
        const tether_compile_result *r1 = k ? &v[1].m3 : &v[1].x86;
        char a[64], b[64], label[64];
        snprintf(label, sizeof label, "%s text/data/bss", tg[k]);
        snprintf(a, sizeof a, "%llu/%llu/%llu", (unsigned long long)r0->build.sizes.text,
                 (unsigned long long)r0->build.sizes.data, (unsigned long long)r0->build.sizes.bss);
        snprintf(b, sizeof b, "%llu/%llu/%llu", (unsigned long long)r1->build.sizes.text,
                 (unsigned long long)r1->build.sizes.data, (unsigned long long)r1->build.sizes.bss);
        printf("%-34s %18s %18s\n", label, a, b);
        snprintf(label, sizeof label, "%s  of text: instructions", tg[k]);
        snprintf(a, sizeof a, "%llu", (unsigned long long)r0->build.sizes.code);
        snprintf(b, sizeof b, "%llu", (unsigned long long)r1->build.sizes.code);
        printf("%-34s %18s %18s\n", label, a, b);
        snprintf(label, sizeof label, "%s static stack (bytes)", tg[k]);
        snprintf(a, sizeof a, "%lld%s", (long long)r0->build.stack.bytes,
                 r0->build.stack.bounded ? "" : " unbounded");
        snprintf(b, sizeof b, "%lld%s", (long long)r1->build.stack.bytes,
                 r1->build.stack.bounded ? "" : " unbounded");
        printf("%-34s %18s %18s\n", label, a, b);
    }
    printf("%-34s %18zu %18zu\n", "x86-64 measured stack HWM (bytes)", v[0].hwm, v[1].hwm);
    printf("%-34s %18.1f %18.1f\n", "x86-64 latency (us, local)", v[0].latency_us, v[1].latency_us);
    printf("(HWM is measured on a painted stack and includes ~300 bytes of the stack switch and "
           "libm's expf)\n");
    free(stack);
    free(x);
    tether_ir_close(&g);
    return v[0].ok && v[1].ok ? 0 : 1;
}
