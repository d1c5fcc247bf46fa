/*
 * Command-line entry points: `plan-buffers FILE [options]` and the shared option handling used
 * by `tether plan MODEL` (tether_plan_cli).
 * What must stay true: bad input gives exactly one line "<prog>: <reason>" on stderr and exit
 * code 2; a planning failure gives one line and exit code 1, and --svg then gets the picture
 * of why it does not fit and --json the message with the operators and buffers (a second line
 * when that cannot be written); the files written are named at the end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define EXIT_PLAN_FAILED 1
#define EXIT_USAGE       2

static void usage(FILE *f, const char *prog) {
    fprintf(f,
            "usage: %s BUFFERS.json [--planner NAME] [--pool name:scope:capacity[:WxH]]... "
            "[--svg OUT.svg] [--json[=FILE]] [--seed N] [--budget N]\n"
            "Plans the buffers of a buffer-list JSON file (format: docs/planner.md).\n"
            "  --planner NAME  naive, shared-objects, greedy-size, greedy-conflicts, search,\n"
            "                  exact or best (default: best = all of them, keep the smallest)\n"
            "  --pool SPEC     a pool, e.g. sram:global:256K, dram:global:unbounded,\n"
            "                  gpu:texture:0:8192x8192; repeatable, tried in the order given;\n"
            "                  replaces the pools of the file\n"
            "  --svg FILE      write the timeline picture\n"
            "  --json          print the plan JSON instead of the report\n"
            "  --json=FILE     write the plan JSON to FILE (the report still goes to stdout)\n"
            "  --seed N        seed of the improving search (default 1)\n"
            "  --budget N      placement orders the improving search evaluates (default 2000)\n"
            "Exit codes: 0 planned, 1 does not fit, 2 bad usage or input.\n",
            prog);
}

static int fail(const char *prog, int code, const char *msg) {
    fprintf(stderr, "%s: %s\n", prog, msg);
    return code;
}

typedef struct cli_args {
    const char *svg;
    const char *json_path;
    bool json;
    bool help;
    const char *positional;
    int npools;
    const char *pools[64];
    bool has_algo, has_seed, has_budget;
    tether_plan_algorithm algo;
    long long seed, budget;
} cli_args;

static bool parse_ll(const char *s, long long lo, long long hi, long long *out) {
    char *end = NULL;
    if (s == NULL || *s == '\0') {
        return false;
    }
    long long v = strtoll(s, &end, 10);
    if (*end != '\0' || v < lo || v > hi) {
        return false;
    }
    *out = v;
    return true;
}

/* Returns 0 or an exit code after printing the reason. */
static int parse_args(const char *prog, int argc, char **argv, int first, bool allow_positional,
                      cli_args *a) {
    char msg[TETHER_ERROR_MSG_MAX + 64];
    memset(a, 0, sizeof(*a));
    for (int i = first; i < argc; i++) {
        const char *arg = argv[i];
        if (arg == NULL) {
            return fail(prog, EXIT_USAGE, "null argument");
        }
        const char *val = NULL;
        char opt[32] = "";
        if (strncmp(arg, "--", 2) == 0) {
            const char *eq = strchr(arg, '=');
            size_t n = eq ? (size_t)(eq - arg) : strlen(arg);
            if (n >= sizeof(opt)) {
                snprintf(msg, sizeof(msg), "unknown option '%.60s' (see --help)", arg);
                return fail(prog, EXIT_USAGE, msg);
            }
            memcpy(opt, arg, n);
            opt[n] = '\0';
            val = eq ? eq + 1 : NULL;
        }
        bool takes = strcmp(opt, "--planner") == 0 || strcmp(opt, "--pool") == 0 ||
                     strcmp(opt, "--svg") == 0 || strcmp(opt, "--seed") == 0 ||
                     strcmp(opt, "--budget") == 0;
        if (takes && val == NULL) {
            if (i + 1 >= argc || argv[i + 1] == NULL) {
                snprintf(msg, sizeof(msg), "option %s needs a value", opt);
                return fail(prog, EXIT_USAGE, msg);
            }
            val = argv[++i];
        }
        if (strcmp(opt, "--help") == 0 || strcmp(arg, "-h") == 0) {
            a->help = true;
        } else if (strcmp(opt, "--json") == 0 && val == NULL) {
            a->json = true;
        } else if (strcmp(opt, "--json") == 0) {
            if (val[0] == '\0') {
                return fail(prog, EXIT_USAGE, "--json= needs a file name");
            }
            a->json_path = val;
        } else if (strcmp(opt, "--planner") == 0) {
            if (tether_plan_algorithm_parse(val, &a->algo) != TETHER_OK) {
                return fail(prog, EXIT_USAGE, tether_last_error());
            }
            a->has_algo = true;
        } else if (strcmp(opt, "--pool") == 0) {
            if (a->npools == 64) {
                return fail(prog, EXIT_USAGE, "at most 64 --pool options");
            }
            a->pools[a->npools++] = val;
        } else if (strcmp(opt, "--svg") == 0) {
            if (val[0] == '\0') {
                return fail(prog, EXIT_USAGE, "--svg needs a file name");
            }
            a->svg = val;
        } else if (strcmp(opt, "--seed") == 0) {
            if (!parse_ll(val, 0, (1LL << 52), &a->seed)) {
                snprintf(msg, sizeof(msg), "--seed '%.40s' is not a non-negative integer", val);
                return fail(prog, EXIT_USAGE, msg);
            }
            a->has_seed = true;
        } else if (strcmp(opt, "--budget") == 0) {
            if (!parse_ll(val, 0, 100000000, &a->budget)) {
                snprintf(msg, sizeof(msg), "--budget '%.40s' must be in 0..100000000", val);
                return fail(prog, EXIT_USAGE, msg);
            }
            a->has_budget = true;
        } else if (arg[0] == '-' && arg[1] != '\0') {
            snprintf(msg, sizeof(msg), "unknown option '%.60s' (see --help)", arg);
            return fail(prog, EXIT_USAGE, msg);
        } else if (!allow_positional || a->positional != NULL) {
            snprintf(msg, sizeof(msg), "unexpected argument '%.60s' (see --help)", arg);
            return fail(prog, EXIT_USAGE, msg);
        } else {
            a->positional = arg;
        }
    }
    return 0;
}

static int run(const char *prog, tether_plan_problem *problem, tether_plan_options *opts,
               const cli_args *a) {
    char msg[TETHER_ERROR_MSG_MAX + 64];
    if (a->npools > 0) {
        tether_plan_problem_clear_pools(problem);
        for (int i = 0; i < a->npools; i++) {
            tether_plan_pool pool;
            char name[TETHER_POOL_NAME_MAX];
            if (tether_plan_pool_parse(a->pools[i], &pool, name) != TETHER_OK ||
                tether_plan_problem_add_pool(problem, &pool) != TETHER_OK) {
                return fail(prog, EXIT_USAGE, tether_last_error());
            }
        }
    }
    if (problem->npools == 0) {
        tether_plan_pool def = {"workspace", TETHER_SCOPE_GLOBAL, TETHER_PLAN_UNBOUNDED, 0, 0, 0};
        if (tether_plan_problem_add_pool(problem, &def) != TETHER_OK) {
            return fail(prog, EXIT_PLAN_FAILED, tether_last_error());
        }
    }
    if (a->has_algo) {
        opts->algorithm = a->algo;
    }
    if (a->has_seed) {
        opts->seed = (uint64_t)a->seed;
    }
    if (a->has_budget) {
        opts->search_budget = (int)a->budget;
    }
    tether_plan plan;
    int rc = tether_plan_run(problem, opts, &plan);
    if (rc != TETHER_OK) {
        /* bad references (unknown pool, mismatched alias group) are input errors */
        int code = (rc == TETHER_ERR_OUT_OF_MEMORY || rc == TETHER_ERR_LIMIT ||
                    rc == TETHER_ERR_UNSUPPORTED)
                       ? EXIT_PLAN_FAILED
                       : EXIT_USAGE;
        snprintf(msg, sizeof(msg), "%s", tether_last_error());
        fail(prog, code, msg);
        /* a plan that does not fit still gets its picture: the bytes live at each operator
         * against the pools, so the user sees where it overflows */
        char *why = NULL;
        if (code == EXIT_PLAN_FAILED && a->svg != NULL) {
            if (tether_plan_problem_to_svg(problem, msg, &why) == TETHER_OK &&
                tether_plan_write_file(a->svg, why) == TETHER_OK) {
                printf("wrote %s (why the plan does not fit)\n", a->svg);
            } else {
                fprintf(stderr, "%s: --svg: %s\n", prog, tether_last_error());
            }
        }
        free(why);
        /* --json of a plan that does not fit: the message, the operators and the buffers */
        if (code == EXIT_PLAN_FAILED && (a->json || a->json_path != NULL)) {
            char *text = NULL;
            if (tether_plan_problem_error_json(problem, msg, &text) != TETHER_OK) {
                fprintf(stderr, "%s: --json: %s\n", prog, tether_last_error());
            } else if (a->json) {
                fputs(text, stdout);
                fputc('\n', stdout);
            } else if (tether_plan_write_file(a->json_path, text) != TETHER_OK) {
                fprintf(stderr, "%s: --json: %s\n", prog, tether_last_error());
            }
            free(text);
        }
        return code;
    }
    int code = 0;
    char *text = NULL;
    if (a->svg != NULL) {
        if (tether_plan_to_svg(problem, &plan, &text) != TETHER_OK ||
            tether_plan_write_file(a->svg, text) != TETHER_OK) {
            code = fail(prog, EXIT_PLAN_FAILED, tether_last_error());
        }
        free(text);
        text = NULL;
    }
    if (code == 0 && a->json_path != NULL) {
        if (tether_plan_to_json(problem, &plan, &text) != TETHER_OK ||
            tether_plan_write_file(a->json_path, text) != TETHER_OK) {
            code = fail(prog, EXIT_PLAN_FAILED, tether_last_error());
        }
        free(text);
        text = NULL;
    }
    if (code == 0 && a->json) {
        if (tether_plan_to_json(problem, &plan, &text) != TETHER_OK) {
            code = fail(prog, EXIT_PLAN_FAILED, tether_last_error());
        } else {
            fputs(text, stdout);
            fputc('\n', stdout);
        }
        free(text);
    } else if (code == 0) {
        tether_plan_summary rows[TETHER_PLAN_ALGORITHM_COUNT];
        int n = tether_plan_compare(problem, opts, rows, TETHER_PLAN_ALGORITHM_COUNT);
        if (n < 0 || tether_plan_report(stdout, problem, &plan, rows, n) != TETHER_OK) {
            code = fail(prog, EXIT_PLAN_FAILED, tether_last_error());
        }
    }
    if (code == 0 && (a->svg != NULL || a->json_path != NULL)) {
        /* every command says which files it wrote (on stderr when stdout carries the JSON) */
        FILE *said = a->json ? stderr : stdout;
        fprintf(said, "wrote %s%s%s\n", a->svg ? a->svg : "", a->svg && a->json_path ? ", " : "",
                a->json_path ? a->json_path : "");
    }
    if (code == 0 && fflush(stdout) != 0) {
        code = fail(prog, EXIT_PLAN_FAILED, "cannot write to stdout");
    }
    tether_plan_close(&plan);
    return code;
}

int tether_plan_cli(const char *prog, tether_plan_problem *problem, int argc, char **argv,
                    int first) {
    if (prog == NULL) {
        prog = "plan";
    }
    if (problem == NULL || argc < 0 || first < 0 || (argc > 0 && argv == NULL)) {
        return fail(prog, EXIT_USAGE, "internal: bad arguments to tether_plan_cli");
    }
    cli_args a;
    int code = parse_args(prog, argc, argv, first, false, &a);
    if (code != 0) {
        return code;
    }
    if (a.help) {
        usage(stdout, prog);
        return 0;
    }
    tether_plan_options opts;
    tether_plan_options_init(&opts);
    return run(prog, problem, &opts, &a);
}

int tether_cmd_plan_buffers(int argc, char **argv) {
    const char *prog = "tether plan-buffers";
    cli_args a;
    int code = parse_args(prog, argc, argv, 1, true, &a);
    if (code != 0) {
        return code;
    }
    if (a.help) {
        usage(stdout, prog);
        return 0;
    }
    if (a.positional == NULL) {
        return fail(prog, EXIT_USAGE, "missing the buffer-list JSON file (see --help)");
    }
    tether_plan_problem problem;
    tether_plan_problem_init(&problem);
    tether_plan_options opts;
    tether_plan_options_init(&opts);
    if (tether_plan_problem_load(&problem, &opts, a.positional) != TETHER_OK) {
        code = fail(prog, EXIT_USAGE, tether_last_error());
    } else {
        code = run(prog, &problem, &opts, &a);
    }
    tether_plan_problem_close(&problem);
    return code;
}
