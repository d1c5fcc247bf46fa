/*
 * `tether compile` and `tether plan`: argument parsing on top of the compiler library.
 *
 * What must stay true: every error is one line "tether <cmd>: <reason>" on stderr with exit code
 * 1 (work failed) or 2 (usage); --help prints usage on stdout with exit code 0; nothing here
 * exits the process (the CLI owns main()).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "../internal.h"
#include "../plan/memplan_internal.h"
#include "tether/compiler.h"
#include "tether/compiler_cli.h"
#include "tether/crt/error.h"
#include "tether/planner.h"

static const char compile_usage[] =
    "usage: tether compile MODEL -o DIR [options]\n"
    "  Compiles a model into an artifact directory. MODEL is a tether JSON model\n"
    "  (docs/model-format.md) or an ONNX model (.onnx, docs/onnx.md).\n"
    "  --abi packed|unpacked        calling convention of the operators (default unpacked)\n"
    "  --interface packed|c         AOT entry: <prefix>_main only, or also <prefix>_run with\n"
    "                               typed structs and a generated header (default packed)\n"
    "  --target NAME                x86_64-linux (default), aarch64-linux,\n"
    "                               cortex-m0/m3/m4/m7/m33/m55, cortex-m55-nomve, rv32imac\n"
    "  --prefix NAME                C identifier prefix (default tether_model)\n"
    "  --opt-level 0|1|2|3|s        optimisation of the build (default 3 for x86_64/aarch64-\n"
    "                               linux, 2 for Cortex-M)\n"
    "  --mcpu CPU                   the CPU to generate code for: a -march value on Linux\n"
    "                               targets (x86-64-v2/v3/v4, armv8.2-a+fp16+dotprod, native),\n"
    "                               a -mcpu value on Cortex-M (default: the target's baseline;\n"
    "                               `tether info` shows a device's cpu)\n"
    "  --soft-float64               allow float64 tensors on an MCU core without a double-\n"
    "                               precision FPU (software doubles; refused by default)\n"
    "  --params linked|blob         weights as const arrays or a params.bin blob (default:\n"
    "                               linked up to 4 MiB of weights, a blob above)\n"
    "  --link-params                same as --params linked\n"
    "  --planner ALGO               memory planner algorithm (default best)\n"
    "  --pool NAME:global:SIZE      a memory pool (repeatable, fastest first; SIZE in bytes\n"
    "                               with K/M/G, or unbounded): tensors go to the first pool\n"
    "                               they fit and spill to the next; the entry takes one buffer\n"
    "                               per pool (default: one static workspace; docs/memory.md);\n"
    "                               with --device, --pool NAME takes the device pool's size\n"
    "  --pin TENSOR=POOL            place that tensor in that pool only (repeatable)\n"
    "  --plan-inputs, --plan-outputs  graph inputs / outputs live in the pools too\n"
    "  --params-pool NAME           (--params blob) the device pool `tether run` puts the\n"
    "                               weights blob in (an MCU's \"code\" memory, like flash)\n"
    "  --no-passes                  skip constant/BN folding, fusion and dead-node removal\n"
    "  --no-build                   write sources and metadata only\n"
    "  --profile                    a profiling build: node times (and stack on a board) for\n"
    "                               `tether profile` (docs/profile.md)\n"
    "  --dump-ir                    print the IR after the passes\n"
    "  --input-shape NAME=D0xD1...  shape of a graph input with dynamic dimensions (ONNX);\n"
    "                               repeatable\n"
    "  --loop-max N                 rows of the scan outputs of an ONNX Loop whose trip count\n"
    "                               has no bound at compile time (more iterations: an error)\n"
    "  --quiet                      do not print the report table\n"
    "  --json FILE                  also write the report (sizes, stack, memory plan) as JSON\n"
    "  --backend c|opencl           C library (default) or OpenCL C kernels + launch sequence\n"
    "                               (DIR/<prefix>.cl, metadata.json, params.bin)\n"
    "  --texture-weights            (opencl) constant conv weights in texture:weight images\n"
    "  --tuning-log FILE            the best schedule per workload from `tether tune`'s log,\n"
    "                               for exactly this target and --mcpu (OpenCL: work-group\n"
    "                               sizes of `tune --backend opencl`)\n"
    "  --texture-activations        (opencl) activations between convolutions and elementwise\n"
    "                               kernels in texture images (NCHW4c), planned in 2D\n"
    "  --image-max WxH              (opencl) the device's image2d limits in texels; a tensor\n"
    "                               over them stays a buffer (default: no limit, or the\n"
    "                               --device's, from its HELLO)\n"
    "  --local-size N               (opencl) work-group size of the launches (default 64)\n"
    "  --precision fp32|fp16        (opencl) fp16: workspace, weights and images in half,\n"
    "                               float arithmetic; inputs/outputs stay float32 (default fp32)\n"
    "  --upload                     then upload and load the artifact on a device:\n"
    "  --device URL                 the device (tcp://, uart://, local:; default $TETHER_DEVICE,\n"
    "                               else local:); an MCU gets a RAM image linked for it;\n"
    "                               without --upload: compile for it (its core, its image\n"
    "                               limits) and upload nothing\n"
    "  --firmware PATH              (MCU) the board's firmware.json or firmware build folder\n"
    "                               (default $TETHER_FIRMWARE, else the build tree's)\n"
    "  --token-file F, --timeout-ms MS   as for the device commands (docs/cli.md)\n"
    "  --wait                       (with --upload or --device) queue for a busy serial device\n"
    "                               instead of failing at once\n";

static int usage_error(const char *cmd, const char *fmt, const char *arg) {
    fprintf(stderr, "tether %s: ", cmd);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see --help)\n");
    return 2;
}

#define MAX_INPUT_SHAPES 32

/* --input-shape NAME=SHAPE, collected into a load-options struct. Returns 0, or 2 after printing
 * the usage error. */
typedef struct shapes_opt {
    tether_model_input_shape shapes[MAX_INPUT_SHAPES];
    tether_model_load_options load;
} shapes_opt;

static int add_input_shape(const char *cmd, shapes_opt *s, const char *spec) {
    if (s->load.ninput_shapes >= MAX_INPUT_SHAPES) {
        return usage_error(cmd, "%s", "too many --input-shape options");
    }
    if (tether_model_input_shape_parse(spec, &s->shapes[s->load.ninput_shapes]) != 0) {
        fprintf(stderr, "tether %s: %s\n", cmd, tether_last_error());
        return 2;
    }
    s->load.input_shapes = s->shapes;
    s->load.ninput_shapes++;
    return 0;
}

/* --loop-max N: the most iterations a run-time Loop with scan outputs and no bound of its own
 * may run (tether_model_load_options.loop_max). Returns 0, or 2 after printing the usage error. */
static int set_loop_max(const char *cmd, shapes_opt *s, const char *v) {
    char *end;
    long long n = strtoll(v, &end, 10);
    if (*end || end == v || n < 1 || n > (1LL << 24)) {
        return usage_error(cmd, "--loop-max '%s' is not 1..16777216", v);
    }
    s->load.loop_max = n;
    return 0;
}

void tether_memory_cli_init(tether_memory_cli *m) {
    memset(m, 0, sizeof *m);
    tether_memory_options_init(&m->opts);
    m->opts.pools = m->pools;
    m->opts.pins = m->pins;
}

int tether_memory_cli_resolve(tether_memory_cli *m, const char *cmd, int npools,
                              const char (*names)[128], const uint64_t *sizes) {
    for (int k = 0; k < m->opts.npools; k++) {
        if (!m->from_device[k]) {
            continue;
        }
        if (npools < 0) {
            fprintf(stderr,
                    "tether %s: --pool %s has no size: give NAME:global:SIZE, or --device to "
                    "take the size of the device's pool\n",
                    cmd, m->pools[k].name);
            return 2;
        }
        int found = -1;
        char have[300] = "";
        for (int i = 0; i < npools; i++) {
            if (strcmp(names[i], m->pools[k].name) == 0) {
                found = i;
            }
            size_t n = strlen(have);
            snprintf(have + n, sizeof have - n, "%s%s", i ? ", " : "", names[i]);
        }
        if (found < 0) {
            fprintf(stderr, "tether %s: --pool %s: the device has no such pool (its pools: %s)\n",
                    cmd, m->pools[k].name, have[0] ? have : "none");
            return 2;
        }
        m->pools[k].capacity = (int64_t)sizes[found]; /* 0 = unbounded */
        m->from_device[k] = false;
    }
    return 0;
}

int tether_memory_cli_given(const tether_memory_cli *m) {
    return m->opts.npools > 0 || m->opts.npins > 0 || m->opts.plan_inputs || m->opts.plan_outputs ||
           m->opts.params_pool;
}

int tether_memory_cli_parse(tether_memory_cli *m, const char *cmd, int argc, char **argv, int *i) {
    const char *a = argv[*i];
    int pool = strcmp(a, "--pool") == 0, pin = strcmp(a, "--pin") == 0;
    if (strcmp(a, "--plan-inputs") == 0) {
        m->opts.plan_inputs = true;
        return 1;
    }
    if (strcmp(a, "--plan-outputs") == 0) {
        m->opts.plan_outputs = true;
        return 1;
    }
    if (strcmp(a, "--params-pool") == 0) {
        if (*i + 1 >= argc || tether_pool_name_check(argv[*i + 1]) != TETHER_OK) {
            return usage_error(cmd, "--params-pool needs a pool name (%s)",
                               *i + 1 < argc ? tether_last_error() : "missing");
        }
        m->opts.params_pool = argv[++*i];
        return 1;
    }
    if (!pool && !pin) {
        return 0;
    }
    if (*i + 1 >= argc) {
        return usage_error(cmd, "%s needs a value", a);
    }
    const char *v = argv[++*i];
    m->opts.pools = m->pools;
    m->opts.pins = m->pins;
    if (pin) {
        if (m->opts.npins >= TETHER_CLI_MAX_PINS) {
            return usage_error(cmd, "%s", "too many --pin options");
        }
        const char *eq = strrchr(v, '=');
        if (!eq || eq == v || !eq[1]) {
            return usage_error(cmd, "--pin '%s' is not TENSOR=POOL", v);
        }
        m->pins[m->opts.npins++] = v;
        return 1;
    }
    if (m->opts.npools >= TETHER_CLI_MAX_POOLS) {
        return usage_error(cmd, "%s", "too many --pool options (at most 8)");
    }
    tether_plan_pool *p = &m->pools[m->opts.npools];
    m->from_device[m->opts.npools] = strchr(v, ':') == NULL;
    if (m->from_device[m->opts.npools]) { /* the device's pool of that name, its size */
        if (tether_pool_name_check(v) != TETHER_OK) {
            fprintf(stderr, "tether %s: --pool '%s': %s\n", cmd, v, tether_last_error());
            return 2;
        }
        snprintf(m->names[m->opts.npools], TETHER_POOL_NAME_MAX, "%s", v);
        memset(p, 0, sizeof *p);
        p->name = m->names[m->opts.npools];
        p->scope = TETHER_SCOPE_GLOBAL;
    } else if (tether_plan_pool_parse(v, p, m->names[m->opts.npools]) != TETHER_OK) {
        fprintf(stderr, "tether %s: --pool '%s': %s\n", cmd, v, tether_last_error());
        return 2;
    }
    if (p->scope != TETHER_SCOPE_GLOBAL) {
        fprintf(stderr,
                "tether %s: --pool '%s': scope %s; compiled C code places tensors in global "
                "pools (NAME:global:SIZE)\n",
                cmd, v, tether_scope_name(p->scope));
        return 2;
    }
    for (int k = 0; k < m->opts.npools; k++) {
        if (strcmp(m->pools[k].name, p->name) == 0) {
            return usage_error(cmd, "--pool '%s' is given twice", p->name);
        }
    }
    m->opts.npools++;
    return 1;
}

/* --json FILE: the artifact's report.json with what this compile was ("compile": model, artifact,
 * backend, node counts, seconds) added at the top. */
static int write_compile_json(const char *path, const char *model, const char *out,
                              const tether_compile_options *o, const tether_compile_result *res) {
    char rpath[4200];
    snprintf(rpath, sizeof rpath, "%s/report.json", out);
    char *text;
    if (tether__read_file(rpath, &text, NULL) != 0) {
        return TETHER_ERR_IO;
    }
    cJSON *root = cJSON_Parse(text);
    free(text);
    if (!root) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "%s is not valid JSON", rpath);
    }
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "model", model);
    cJSON_AddStringToObject(c, "artifact", out);
    cJSON_AddStringToObject(c, "backend", o->backend == TETHER_BACKEND_OPENCL ? "opencl" : "c");
    cJSON_AddNumberToObject(c, "codegen_seconds", res->codegen_seconds);
    cJSON_AddItemToObject(root, "compile", c);
    char *txt = cJSON_Print(root);
    cJSON_Delete(root);
    if (!txt) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory writing %s", path);
    }
    size_t len = strlen(txt);
    txt[len] = '\n'; /* in place of the NUL: the file ends with a newline */
    int rc = tether_file_write(path, txt, len + 1);
    free(txt);
    return rc;
}

static int cmp_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "wrote DIR/: a.c, a.h, lib.so, ...; the --json file": the files of the artifact directory
 * this compile wrote (modified since `since`; older files of the directory are not its),
 * sorted. */
static void say_written(const char *dir, const char *json, time_t since) {
    DIR *d = opendir(dir);
    if (!d) {
        return;
    }
    char **names = NULL;
    int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (e->d_name[0] == '.' || stat(path, &st) != 0 || st.st_mtime < since) {
            continue;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 32;
            char **nn = realloc(names, sizeof *nn * (size_t)cap);
            if (!nn) {
                break;
            }
            names = nn;
        }
        if ((names[n] = strdup(e->d_name)) != NULL) {
            n++;
        }
    }
    closedir(d);
    if (n > 0) {
        qsort(names, (size_t)n, sizeof names[0], cmp_names);
    }
    size_t dl = strlen(dir);
    printf("wrote %s%s: ", dir, dl && dir[dl - 1] == '/' ? "" : "/");
    for (int i = 0; i < n; i++) {
        printf("%s%s", i ? ", " : "", names[i]);
        free(names[i]);
    }
    free(names);
    if (json && strcmp(json, "-") != 0) {
        printf("; %s", json);
    }
    printf("\n");
}

int tether_cmd_compile(int argc, char **argv) {
    return tether_cmd_compile_with(argc, argv, NULL, NULL);
}

int tether_cmd_compile_with(int argc, char **argv, tether_compile_hook hook, void *ctx) {
    time_t started = time(NULL) - 1; /* file times have whole seconds on some file systems */
    tether_compile_options o;
    tether_compile_options_init(&o);
    static tether_memory_cli mem;
    tether_memory_cli_init(&mem);
    static shapes_opt shp;
    memset(&shp, 0, sizeof shp);
    const char *model = NULL, *out = NULL, *json = NULL, *tuning_log = NULL;
    int dump = 0, quiet = 0, params_given = 0;
    const char *c_only = NULL, *ocl_only = NULL; /* options of one backend only */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(compile_usage, stdout);
            return 0;
        }
        int takes = strcmp(a, "-o") == 0 || strcmp(a, "--abi") == 0 ||
                    strcmp(a, "--interface") == 0 || strcmp(a, "--target") == 0 ||
                    strcmp(a, "--prefix") == 0 || strcmp(a, "--opt-level") == 0 ||
                    strcmp(a, "--mcpu") == 0 || strcmp(a, "--params") == 0 ||
                    strcmp(a, "--planner") == 0 || strcmp(a, "--input-shape") == 0 ||
                    strcmp(a, "--loop-max") == 0 || strcmp(a, "--backend") == 0 ||
                    strcmp(a, "--local-size") == 0 || strcmp(a, "--json") == 0 ||
                    strcmp(a, "--image-max") == 0 || strcmp(a, "--tuning-log") == 0 ||
                    strcmp(a, "--precision") == 0;
        if (takes && (!v || (v[0] == '-' && v[1] == '-'))) {
            return usage_error("compile", "%s needs a value", a);
        }
        int mrc = tether_memory_cli_parse(&mem, "compile", argc, argv, &i);
        if (mrc == 2) {
            return 2;
        }
        if (mrc == 1) {
            c_only = c_only ? c_only : a;
            continue;
        }
        if (!c_only && (strcmp(a, "--abi") == 0 || strcmp(a, "--interface") == 0 ||
                        strcmp(a, "--target") == 0 || strcmp(a, "--opt-level") == 0 ||
                        strcmp(a, "--mcpu") == 0 || strcmp(a, "--params") == 0 ||
                        strcmp(a, "--link-params") == 0 || strcmp(a, "--no-build") == 0)) {
            c_only = a;
        }
        if (strcmp(a, "-o") == 0) {
            out = v;
        } else if (strcmp(a, "--json") == 0) {
            json = v;
        } else if (strcmp(a, "--backend") == 0) {
            if (tether_backend_parse(v, &o.backend) != 0) {
                return usage_error("compile", "unknown backend '%s' (c, opencl)", v);
            }
        } else if (strcmp(a, "--texture-weights") == 0) {
            o.opencl.texture_weights = true;
            ocl_only = a;
        } else if (strcmp(a, "--precision") == 0) {
            if (strcmp(v, "fp16") != 0 && strcmp(v, "fp32") != 0) {
                return usage_error("compile", "--precision '%s' is not fp32 or fp16", v);
            }
            o.opencl.fp16 = strcmp(v, "fp16") == 0;
            if (o.opencl.fp16) {
                ocl_only = a;
            }
        } else if (strcmp(a, "--tuning-log") == 0) {
            tuning_log = v;
        } else if (strcmp(a, "--texture-activations") == 0) {
            o.opencl.texture_activations = true;
            ocl_only = a;
        } else if (strcmp(a, "--image-max") == 0) {
            long long w = 0, h = 0;
            char tail = 0;
            if (sscanf(v, "%lldx%lld%c", &w, &h, &tail) != 2 || w < 1 || h < 1) {
                return usage_error("compile", "--image-max '%s' is not WIDTHxHEIGHT (texels)", v);
            }
            o.opencl.image_max_width = w;
            o.opencl.image_max_height = h;
            ocl_only = a;
        } else if (strcmp(a, "--local-size") == 0) {
            char *end;
            long ls = strtol(v, &end, 10);
            if (*end || end == v || ls < 1 || ls > 1024) {
                return usage_error("compile", "--local-size '%s' is not 1..1024", v);
            }
            o.opencl.local_size = (int)ls;
            ocl_only = a;
        } else if (strcmp(a, "--input-shape") == 0) {
            if (add_input_shape("compile", &shp, v)) {
                return 2;
            }
        } else if (strcmp(a, "--loop-max") == 0) {
            if (set_loop_max("compile", &shp, v)) {
                return 2;
            }
        } else if (strcmp(a, "--abi") == 0) {
            if (tether_abi_parse(v, &o.codegen.abi) != 0) {
                return usage_error("compile", "unknown ABI '%s' (packed, unpacked)", v);
            }
        } else if (strcmp(a, "--interface") == 0) {
            if (tether_interface_parse(v, &o.codegen.interface) != 0) {
                return usage_error("compile", "unknown interface '%s' (packed, c)", v);
            }
        } else if (strcmp(a, "--target") == 0) {
            const tether_target *t;
            if (tether_target_find(v, &t) != 0) {
                fprintf(stderr, "tether compile: %s\n", tether_error_detail());
                return 2;
            }
            o.build.target = t->name;
        } else if (strcmp(a, "--prefix") == 0) {
            if (!tether__c_identifier_ok(v, 48)) {
                return usage_error("compile",
                                   "--prefix '%s' is not a C identifier (a letter, then letters, "
                                   "digits or _; at most 48)",
                                   v);
            }
            o.codegen.prefix = v;
        } else if (strcmp(a, "--mcpu") == 0) {
            o.build.cpu = v;
        } else if (strcmp(a, "--soft-float64") == 0) {
            o.build.soft_float64 = true;
        } else if (strcmp(a, "--opt-level") == 0) {
            if (strcmp(v, "s") == 0) {
                o.build.opt_level = -1;
            } else if (strlen(v) == 1 && v[0] >= '0' && v[0] <= '3') {
                o.build.opt_level = v[0] - '0';
            } else {
                return usage_error("compile", "opt level '%s' is not 0, 1, 2, 3 or s", v);
            }
        } else if (strcmp(a, "--params") == 0) {
            params_given = 1;
            if (strcmp(v, "linked") == 0) {
                o.codegen.link_params = true;
            } else if (strcmp(v, "blob") == 0) {
                o.codegen.link_params = false;
            } else {
                return usage_error("compile", "--params '%s' is not linked or blob", v);
            }
        } else if (strcmp(a, "--link-params") == 0) {
            params_given = 1;
            o.codegen.link_params = true;
        } else if (strcmp(a, "--planner") == 0) {
            tether_plan_algorithm algo;
            if (tether_plan_algorithm_parse(v, &algo) != TETHER_OK) {
                return usage_error("compile", "%s", tether_last_error());
            }
            o.planner = v;
        } else if (strcmp(a, "--no-passes") == 0) {
            memset(&o.passes, 0, sizeof o.passes);
        } else if (strcmp(a, "--no-build") == 0) {
            o.build_library = false;
        } else if (strcmp(a, "--profile") == 0) {
            o.profile = true;
        } else if (strcmp(a, "--dump-ir") == 0) {
            dump = 1;
        } else if (strcmp(a, "--quiet") == 0) {
            quiet = 1;
        } else if (strcmp(a, "--wait") == 0 || strcmp(a, "--firmware") == 0 ||
                   strcmp(a, "--token-file") == 0 || strcmp(a, "--timeout-ms") == 0) {
            /* options of the device path (--upload/--device), which takes them out first */
            return usage_error("compile", "%s is for a device: give --upload or --device", a);
        } else if (a[0] == '-') {
            return usage_error("compile", "unknown option '%s'", a);
        } else if (!model) {
            model = a;
        } else {
            return usage_error("compile", "unexpected argument '%s'", a);
        }
        if (takes) {
            i++;
        }
    }
    if (!model) {
        return usage_error("compile", "%s", "missing MODEL");
    }
    if (!out && !dump) {
        return usage_error("compile", "%s", "missing -o DIR");
    }
    if (o.backend == TETHER_BACKEND_OPENCL && c_only) {
        return usage_error("compile", "%s applies to the C backend, not --backend opencl", c_only);
    }
    if (o.backend != TETHER_BACKEND_OPENCL && ocl_only) {
        return usage_error("compile", "%s needs --backend opencl", ocl_only);
    }
    if (json && !out) {
        return usage_error("compile", "%s",
                           "--json needs -o DIR (it writes the artifact's report)");
    }
    o.memory = mem.opts;
    if (!params_given) { /* large weights go to a params blob (docs/codegen.md, "Weights") */
        o.params_link_max = TETHER_PARAMS_LINK_MAX;
    }
    if (hook) { /* the options as parsed, completed by the caller (a device's choices) */
        int hrc = hook(ctx, &o, &mem);
        if (hrc != 0) {
            return hrc;
        }
    }
    if (tether_memory_cli_resolve(&mem, "compile", -1, NULL, NULL)) {
        return 2;
    }
    if (json && tether_file_out_check(json) != 0) { /* found out now, not after the compile */
        fprintf(stderr, "tether compile: --json: %s\n", tether_last_error());
        return 2;
    }
    tether_ir_graph g;
    if (tether_model_load_with(model, &shp.load, &g) != 0) {
        fprintf(stderr, "tether compile: %s\n", tether_error_detail());
        return 1;
    }
    int rc = 0;
    if (dump && !out) {
        tether_compile_result pres;
        memset(&pres, 0, sizeof pres);
        if (tether__compile_passes(&g, &o, &pres) != 0) { /* the passes a compile runs */
            fprintf(stderr, "tether compile: %s\n", tether_error_detail());
            rc = 1;
        } else {
            tether_ir_print(stdout, &g);
        }
        tether_ir_close(&g);
        return rc;
    }
    tether_tuning_log log;
    tether_node_schedule *ns = NULL;
    if (tuning_log && tether_tuning_log_apply(tuning_log, &o, &log, &ns) != 0) {
        fprintf(stderr, "tether compile: --tuning-log: %s\n", tether_last_error());
        tether_ir_close(&g);
        return 1;
    }
    tether_compile_result res;
    if (tether_compile_graph(&g, out, &o, &res) != 0) {
        fprintf(stderr, "tether compile: %s\n", tether_error_detail());
        tether_ir_close(&g);
        if (tuning_log) {
            free(ns);
            tether_tuning_log_close(&log);
        }
        return 1;
    }
    if (tuning_log) {
        tether_tuning_note(stdout, &res, &log, &o);
        free(ns);
        tether_tuning_log_close(&log);
    }
    if (dump) {
        tether_ir_print(stdout, &g);
    }
    tether_ir_close(&g);
    if (!quiet) {
        printf("compiled %s -> %s (%d nodes, %d after passes, %s in %.3f s)\n", model, out,
               res.nnodes_in, res.nnodes_out, o.backend == TETHER_BACKEND_OPENCL ? "OpenCL C" : "C",
               res.codegen_seconds);
        tether_report_print(stdout, out);
    }
    if (json && write_compile_json(json, model, out, &o, &res) != 0) {
        fprintf(stderr, "tether compile: %s\n", tether_last_error());
        return 1;
    }
    if (!quiet) {
        say_written(out, json, started);
    }
    return 0;
}

static const char plan_usage[] =
    "usage: tether plan MODEL [--target NAME] [--planner ALGO] [--pool SPEC] [--svg FILE]\n"
    "                         [--json[=FILE]] ...\n"
    "  Plans the workspace of a model as `tether compile` does for the same target and options:\n"
    "  the same passes run (the C backend's padded conv inputs on hosted targets included), then\n"
    "  every intermediate tensor becomes a buffer whose live interval runs from its producing\n"
    "  operator to its last reader. Options are those of `tether plan-buffers`\n"
    "  (docs/planner.md), and these of `tether compile`:\n"
    "  --target NAME  x86_64-linux (default), aarch64-linux,\n"
    "                 cortex-m0/m3/m4/m7/m33/m55, cortex-m55-nomve, rv32imac\n"
    "  --mcpu CPU     the CPU the code is for (its vector width decides which convolutions\n"
    "                 read a padded copy of their input)\n"
    "  --backend c|opencl  (default c; --texture-activations and --texture-weights mean opencl)\n"
    "  --no-passes    plan the graph as loaded\n"
    "  --pin TENSOR=POOL, --plan-inputs, --plan-outputs  as for tether compile: the plan the\n"
    "                compile with the same --pool options makes (docs/memory.md)\n"
    "  --texture-activations [--texture-weights] [--image-max WxH]  the OpenCL backend's plan:\n"
    "                the activations its storage-scope pass puts in textures go to a\n"
    "                \"texture\" pool of 2D images within those limits (docs/codegen.md)\n"
    "  --input-shape NAME=D0xD1...  shape of a graph input with dynamic dimensions (ONNX)\n"
    "  --loop-max N   rows of the scan outputs of an ONNX Loop with no bound (as for compile)\n";

/* Whether a (an option of the planner's command line, tether_plan_cli) takes the next argument
 * as its value. */
static int planner_option_takes(const char *a) {
    return strcmp(a, "--planner") == 0 || strcmp(a, "--pool") == 0 || strcmp(a, "--svg") == 0 ||
           strcmp(a, "--seed") == 0 || strcmp(a, "--budget") == 0;
}

int tether_cmd_plan(int argc, char **argv) {
    const char *model = NULL;
    tether_compile_options o;
    tether_compile_options_init(&o);
    static shapes_opt shp;
    memset(&shp, 0, sizeof shp);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(plan_usage, stdout);
            return 0;
        }
    }
    /* The options of tether compile (the memory options but --pool, which the planner's parser
     * takes with texture pools too; the target, backend and passes) and MODEL are taken out
     * wherever they stand; the rest goes to the planner's option parser. */
    static tether_memory_cli mem;
    tether_memory_cli_init(&mem);
    static char *rest[256];
    int nrest = 0;
    if (argc > 255) {
        return usage_error("plan", "%s", "more than 255 arguments");
    }
    const char *c_only = NULL, *ocl_only = NULL, *backend = NULL;
    rest[nrest++] = argv[0];
    for (int k = 1; k < argc; k++) {
        const char *a = argv[k];
        const char *v = k + 1 < argc ? argv[k + 1] : NULL;
        if (strcmp(a, "--pool") != 0) {
            int mrc = tether_memory_cli_parse(&mem, "plan", argc, argv, &k);
            if (mrc == 2) {
                return 2;
            }
            if (mrc == 1) {
                continue;
            }
        }
        int takes = strcmp(a, "--target") == 0 || strcmp(a, "--mcpu") == 0 ||
                    strcmp(a, "--backend") == 0 || strcmp(a, "--image-max") == 0 ||
                    strcmp(a, "--input-shape") == 0 || strcmp(a, "--loop-max") == 0;
        if (takes && (!v || (v[0] == '-' && v[1] == '-'))) {
            return usage_error("plan", "%s needs a value", a);
        }
        if (strcmp(a, "--no-passes") == 0) {
            memset(&o.passes, 0, sizeof o.passes);
        } else if (strcmp(a, "--target") == 0) {
            const tether_target *t;
            if (tether_target_find(v, &t) != 0) {
                fprintf(stderr, "tether plan: %s\n", tether_error_detail());
                return 2;
            }
            o.build.target = t->name;
            c_only = a;
        } else if (strcmp(a, "--mcpu") == 0) {
            o.build.cpu = v;
            c_only = a;
        } else if (strcmp(a, "--backend") == 0) {
            if (tether_backend_parse(v, &o.backend) != 0) {
                return usage_error("plan", "unknown backend '%s' (c, opencl)", v);
            }
            backend = v;
        } else if (strcmp(a, "--texture-activations") == 0) {
            o.opencl.texture_activations = true;
            ocl_only = a;
        } else if (strcmp(a, "--texture-weights") == 0) {
            o.opencl.texture_weights = true;
            ocl_only = a;
        } else if (strcmp(a, "--image-max") == 0) {
            long long w = 0, h = 0;
            char tail = 0;
            if (sscanf(v, "%lldx%lld%c", &w, &h, &tail) != 2 || w < 1 || h < 1) {
                return usage_error("plan", "--image-max '%s' is not WIDTHxHEIGHT (texels)", v);
            }
            o.opencl.image_max_width = w;
            o.opencl.image_max_height = h;
            ocl_only = a;
        } else if (strcmp(a, "--input-shape") == 0) {
            if (add_input_shape("plan", &shp, v)) {
                return 2;
            }
        } else if (strcmp(a, "--loop-max") == 0) {
            if (set_loop_max("plan", &shp, v)) {
                return 2;
            }
        } else if (a[0] != '-' && !model) {
            model = a;
            continue;
        } else {
            rest[nrest++] = argv[k];
            if (planner_option_takes(a) && v) {
                rest[nrest++] = argv[++k];
            }
            continue;
        }
        if (takes) {
            k++;
        }
    }
    rest[nrest] = NULL;
    if (mem.opts.params_pool) {
        return usage_error("plan", "%s", "--params-pool places weights, which are not planned");
    }
    if (ocl_only && !backend) {
        o.backend = TETHER_BACKEND_OPENCL; /* the texture options are the OpenCL backend's */
    }
    if (o.backend != TETHER_BACKEND_OPENCL && ocl_only) {
        return usage_error("plan", "%s needs --backend opencl", ocl_only);
    }
    if (o.backend == TETHER_BACKEND_OPENCL && c_only) {
        return usage_error("plan", "%s applies to the C backend, not --backend opencl", c_only);
    }
    int memory = tether_memory_cli_given(&mem);
    if (memory && o.backend == TETHER_BACKEND_OPENCL) {
        fprintf(stderr, "tether plan: --pin, --plan-inputs and --plan-outputs plan C artifacts, "
                        "not the OpenCL backend's (--texture-activations)\n");
        return 2;
    }
    if (!model) {
        return usage_error("plan", "%s", "missing MODEL");
    }
    tether_ir_graph g;
    if (tether_model_load_with(model, &shp.load, &g) != 0) {
        fprintf(stderr, "tether plan: %s\n", tether_error_detail());
        return 1;
    }
    /* the passes of a compile with these options, through the compile's own pipeline */
    tether_compile_result res;
    memset(&res, 0, sizeof res);
    if (tether__compile_passes(&g, &o, &res) != 0) {
        fprintf(stderr, "tether plan: %s\n", tether_error_detail());
        tether_ir_close(&g);
        return 1;
    }
    tether_plan_problem p;
    memset(&p, 0, sizeof p);
    int *buffer_of = malloc(sizeof(int) * (size_t)(g.ntensors ? g.ntensors : 1));
    int rc;
    int64_t *extent = NULL;
    tether_plan_pool tpool = {.name = "texture",
                              .scope = TETHER_SCOPE_TEXTURE,
                              .capacity = TETHER_PLAN_UNBOUNDED,
                              .max_width = o.opencl.image_max_width,
                              .max_height = o.opencl.image_max_height};
    if (o.opencl.texture_activations) {
        extent = calloc((size_t)(g.ntensors ? g.ntensors : 1) * 2, sizeof *extent);
        if (!extent || tether__opencl_texture_extents(&g, &o.opencl, extent) != 0) {
            fprintf(stderr, "tether plan: %s\n", extent ? tether_last_error() : "out of memory");
            free(extent);
            free(buffer_of);
            tether_ir_close(&g);
            return 1;
        }
    }
    if (!buffer_of || (memory ? tether__memplan_problem_memory(&g, &mem.opts, true, &p, buffer_of)
                              : tether__memplan_problem(&g, &p, buffer_of, extent ? &tpool : NULL,
                                                        extent)) != 0) {
        fprintf(stderr, "tether plan: %s\n", buffer_of ? tether_last_error() : "out of memory");
        rc = 1;
    } else {
        rc = tether_plan_cli("tether plan", &p, nrest, rest, 1);
    }
    free(buffer_of);
    free(extent);
    tether_plan_problem_close(&p);
    tether_ir_close(&g);
    return rc;
}

static const char import_usage[] =
    "usage: tether import MODEL -o OUT.json [--weights FILE] [--input-shape NAME=D0xD1...]\n"
    "  Converts a model of a registered format (.onnx, docs/onnx.md) into the tether JSON model\n"
    "  format (docs/model-format.md): OUT.json plus its weights file (default OUT.bin beside\n"
    "  it). No passes run: the file holds the graph as imported.\n"
    "  --input-shape NAME=D0xD1...  shape of a graph input with dynamic dimensions; repeatable\n"
    "  --loop-max N                 rows of the scan outputs of an ONNX Loop with no bound\n";

int tether_cmd_import(int argc, char **argv) {
    static shapes_opt shp;
    memset(&shp, 0, sizeof shp);
    const char *model = NULL, *out = NULL, *weights = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(import_usage, stdout);
            return 0;
        }
        int takes = strcmp(a, "-o") == 0 || strcmp(a, "--weights") == 0 ||
                    strcmp(a, "--input-shape") == 0 || strcmp(a, "--loop-max") == 0;
        if (takes && !v) {
            return usage_error("import", "%s needs a value", a);
        }
        if (strcmp(a, "-o") == 0) {
            out = v;
        } else if (strcmp(a, "--weights") == 0) {
            weights = v;
        } else if (strcmp(a, "--input-shape") == 0) {
            if (add_input_shape("import", &shp, v)) {
                return 2;
            }
        } else if (strcmp(a, "--loop-max") == 0) {
            if (set_loop_max("import", &shp, v)) {
                return 2;
            }
        } else if (a[0] == '-') {
            return usage_error("import", "unknown option '%s'", a);
        } else if (!model) {
            model = a;
        } else {
            return usage_error("import", "unexpected argument '%s'", a);
        }
        if (takes) {
            i++;
        }
    }
    if (!model) {
        return usage_error("import", "%s", "missing MODEL");
    }
    if (!out) {
        return usage_error("import", "%s", "missing -o OUT.json");
    }
    size_t ol = strlen(out);
    if (ol < 6 || strcmp(out + ol - 5, ".json") != 0) {
        return usage_error("import", "output '%s' must end in .json", out);
    }
    char wpath[1100];
    if (weights) {
        snprintf(wpath, sizeof wpath, "%s", weights);
    } else {
        snprintf(wpath, sizeof wpath, "%.*s.bin", (int)(ol - 5), out);
    }
    const char *wbase = strrchr(wpath, '/');
    wbase = wbase ? wbase + 1 : wpath;
    const char *obase = strrchr(out, '/');
    if ((size_t)(wbase - wpath) != (obase ? (size_t)(obase + 1 - out) : 0) ||
        strncmp(wpath, out, (size_t)(wbase - wpath)) != 0) {
        return usage_error("import", "weights file '%s' must be in the directory of the model",
                           wpath);
    }
    tether_ir_graph g;
    if (tether_model_load_with(model, &shp.load, &g) != 0) {
        fprintf(stderr, "tether import: %s\n", tether_error_detail());
        return 1;
    }
    /* Write into a fresh directory beside the targets, then rename both files into place: a
     * failure leaves nothing behind. */
    char tdir[1200], tj[2400], tw[2400];
    int dl = obase ? (int)(obase + 1 - out) : 0;
    snprintf(tdir, sizeof tdir, "%.*s.tether-import-XXXXXX", dl, out);
    int rc = TETHER_OK;
    if (!mkdtemp(tdir)) {
        rc = tether_set_error(TETHER_ERR_IO, "cannot create a temporary directory beside %s: %s",
                              out, strerror(errno));
    } else {
        snprintf(tj, sizeof tj, "%s/%s", tdir, obase ? obase + 1 : out);
        snprintf(tw, sizeof tw, "%s/%s", tdir, wbase);
        rc = tether_model_save_json(&g, tj, tw);
        /* each file is renamed into place only over a regular file or nothing; a device or
         * a symbolic link is written in place (tether_file_write) */
        for (int k = 0; rc == 0 && k < 2; k++) {
            char *data;
            size_t len;
            rc = tether__read_file(k ? tj : tw, &data, &len);
            if (rc == 0) {
                rc = tether_file_write(k ? out : wpath, data, len);
                free(data);
            }
        }
        unlink(tj);
        unlink(tw);
        rmdir(tdir);
    }
    if (rc != 0) {
        fprintf(stderr, "tether import: %s\n", tether_error_detail());
        tether_ir_close(&g);
        return 1;
    }
    printf("imported %s -> %s + %s (%d tensors, %d nodes, %d inputs, %d outputs)\n", model, out,
           wpath, g.ntensors, g.nnodes, g.ninputs, g.noutputs);
    tether_ir_close(&g);
    return 0;
}
