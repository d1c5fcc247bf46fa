/*
 * tether planner: static memory planning for a list of buffers with live intervals.
 *
 * Input: a problem = pools (1D arenas such as "sram"/"dram", or 2D texture pools with the
 * device's image limits) and buffers (size, alignment, inclusive live interval [first, last] in
 * operator indices, storage scope, ordered candidate pools, optional pin, alias group, and for
 * texture scopes a 2D extent in RGBA texels plus a dtype). The planner knows nothing about the
 * compiler IR. Output: a plan = for every buffer its pool and byte offset (1D) or image id
 * (texture), per-pool sizes and lower bounds, and the images of every texture pool.
 *
 * Algorithms (tether_plan_algorithm): naive, greedy best-fit over shared objects, greedy by size
 * with offset gap search, greedy by conflicts, an improving search (seeded, fixed budget), an
 * exact search for small problems, and "best" (runs them all, keeps the smallest total).
 *
 * Ownership: tether_plan_problem owns copies of every string and array added to it (the
 * descriptors passed to the add functions may be freed right after the call); close it with
 * tether_plan_problem_close. tether_plan owns its arrays; close it with tether_plan_close.
 * Strings returned through `char **` are malloc'd and freed by the caller with free().
 * Nothing here is thread-safe per object; distinct objects may be used from distinct threads.
 * Errors: int status (0 ok, negative tether_status) and the text in tether_last_error().
 */
#ifndef TETHER_PLANNER_H
#define TETHER_PLANNER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <dlpack/dlpack.h>

#include "tether/crt/error.h"
#include "tether/crt/scope.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Pool capacity meaning "no limit". */
#define TETHER_PLAN_UNBOUNDED 0
/* Default offset alignment of a pool and of a buffer that asks for 0. */
#define TETHER_PLAN_DEFAULT_ALIGNMENT 16
/* Default largest problem the exact search accepts (after merging alias groups). */
#define TETHER_PLAN_EXACT_MAX_DEFAULT 14
/* Default bound on width/height (and height/width) of a texture image grown by reuse. */
#define TETHER_PLAN_TEXTURE_RATIO_DEFAULT 5.0

typedef enum tether_plan_algorithm {
    TETHER_PLAN_NAIVE = 0,            /* "naive": no reuse, the upper bound */
    TETHER_PLAN_SHARED_OBJECTS = 1,   /* "shared-objects": greedy best-fit over shared objects */
    TETHER_PLAN_GREEDY_SIZE = 2,      /* "greedy-size": largest first, offset gap search */
    TETHER_PLAN_GREEDY_CONFLICTS = 3, /* "greedy-conflicts": most overlapping first */
    TETHER_PLAN_SEARCH = 4,           /* "search": improving search over placement orders */
    TETHER_PLAN_EXACT = 5,            /* "exact": optimum for small problems */
    TETHER_PLAN_BEST = 6,             /* "best": every algorithm above, keep the smallest */
} tether_plan_algorithm;

#define TETHER_PLAN_ALGORITHM_COUNT 7

/* What a buffer is in the graph. Inputs/outputs may be left to the caller (options). */
typedef enum tether_plan_kind {
    TETHER_PLAN_INTERMEDIATE = 0,
    TETHER_PLAN_GRAPH_INPUT = 1,
    TETHER_PLAN_GRAPH_OUTPUT = 2,
} tether_plan_kind;

typedef struct tether_plan_pool {
    const char *name;   /* a valid pool name (tether_pool_name_check); unique in the problem */
    tether_scope scope; /* global = 1D byte arena; texture / texture:weight = 2D image pool */
    int64_t capacity;   /* bytes (texture pools: bytes of all images); TETHER_PLAN_UNBOUNDED */
    int64_t alignment;  /* 1D pools: every offset is a multiple of it (power of two; 0 = 16) */
    int64_t max_width;  /* texture pools: device image limits in texels (0 = no limit) */
    int64_t max_height;
} tether_plan_pool;

typedef struct tether_plan_buffer {
    const char *name;  /* unique in the problem */
    int64_t size;      /* bytes; for texture scopes 0 = width*height*4*dtype bytes */
    int64_t alignment; /* power of two, 0 = the pool's alignment (the larger of both is used) */
    int32_t first;     /* live interval in operator indices, inclusive, 0 <= first <= last */
    int32_t last;
    tether_scope scope;
    tether_plan_kind kind;
    /* Ordered candidate pools, tried first to last. npools == 0: every pool, in problem order.
     * A texture-scope buffer uses the texture pools of the list whose scope matches its own
     * and falls back to the global pools of the list when it fits no image pool. */
    const char *const *pools;
    int npools;
    const char *pin_pool; /* NULL = not pinned; otherwise the buffer goes to this pool only */
    int64_t pin_offset;   /* with pin_pool on a 1D pool: a fixed offset; -1 = any offset */
    int32_t alias_group;  /* 0 = none; buffers with the same id share one storage */
    int64_t width;        /* texture scopes: image extent in RGBA texels */
    int64_t height;
    DLDataType dtype; /* texture scopes: element type of a texel component */
} tether_plan_buffer;

/* A graph input or output the caller provides (not a buffer of the problem: never planned),
 * known only so that the pictures can show it beside the plan. */
typedef struct tether_plan_io {
    char *name;
    tether_plan_kind kind; /* TETHER_PLAN_GRAPH_INPUT or _OUTPUT */
    int32_t first, last;   /* operators it is live over */
    int64_t size;          /* bytes */
} tether_plan_io;

/* A problem: pools and buffers, owned copies. Read the arrays directly; change them only
 * through the functions below. Operator names and caller-provided graph inputs/outputs are
 * optional annotations for the reports and pictures; planning ignores them. */
typedef struct tether_plan_problem {
    tether_plan_pool *pools;
    int npools;
    tether_plan_buffer *buffers;
    int nbuffers;
    int pools_cap_;   /* private */
    int buffers_cap_; /* private */
    char **operators; /* operator i's name (the graph node), NULL = none given */
    int noperators;
    tether_plan_io *ios;
    int nios;
} tether_plan_problem;

typedef struct tether_plan_options {
    tether_plan_algorithm algorithm; /* default TETHER_PLAN_BEST */
    bool plan_inputs;                /* default true; false leaves graph inputs to the caller */
    bool plan_outputs;               /* default true; false leaves graph outputs to the caller */
    uint64_t seed;                   /* improving search seed (default 1) */
    int search_budget;               /* placement orders the search evaluates (default 2000;
                                      * capped near 5e7/n^2, never below 20) */
    int exact_max_buffers;           /* exact search size limit (default 14, at most 20) */
    double texture_max_ratio;        /* aspect bound for grown images (default 5.0, >= 1) */
} tether_plan_options;

/* Where one buffer went. */
typedef struct tether_plan_assignment {
    int pool;       /* index into problem->pools; -1 when left to the caller (not planned) */
    int64_t offset; /* byte offset in a 1D pool (-1 for images and unplanned buffers) */
    int image;      /* index into plan->images for texture placements, else -1 */
    bool fallback;  /* a texture-scope buffer placed in a global pool (over the image limits) */
} tether_plan_assignment;

/* One 2D image of a texture pool; several buffers with disjoint lifetimes may share it. */
typedef struct tether_plan_image {
    int pool; /* index into problem->pools */
    tether_scope scope;
    DLDataType dtype;
    int64_t width; /* texels */
    int64_t height;
} tether_plan_image;

typedef struct tether_plan_pool_usage {
    int64_t size;        /* 1D: arena bytes (end of the highest buffer); texture: image bytes */
    int64_t lower_bound; /* max over time of the bytes live in this pool under this plan */
    int nbuffers;        /* buffers placed here */
    int nimages;         /* texture pools: images created */
    int64_t texel_area;  /* texture pools: sum of width*height over images */
    int64_t texel_waste; /* texture pools: texel_area minus the largest live texels over time */
} tether_plan_pool_usage;

typedef struct tether_plan {
    tether_plan_algorithm algorithm; /* the algorithm that produced it (for best: the winner) */
    int nbuffers;                    /* == problem->nbuffers */
    tether_plan_assignment *assign;  /* one per problem buffer, same order */
    int npools;                      /* == problem->npools */
    tether_plan_pool_usage *pools;   /* one per problem pool, same order */
    int nimages;
    tether_plan_image *images;
    int64_t total_bytes; /* sum of pools[].size */
    int nfallbacks;      /* texture buffers that fell back to a global pool */
    /* Max over time of the bytes of all planned storage live together (every pool, alias
     * groups once, texture buffers at their byte size). total_bytes >= lower_bound always, and
     * it is the same for every algorithm, so reports divide by it. */
    int64_t lower_bound;
} tether_plan;

/* One row of the comparison table (tether_plan_compare). */
typedef struct tether_plan_summary {
    tether_plan_algorithm algorithm;
    int status; /* 0, or why this algorithm gave no plan (exact: too many buffers) */
    char error[TETHER_ERROR_MSG_MAX];
    int64_t total_bytes; /* valid when status == 0 */
    int nfallbacks;
} tether_plan_summary;

/* ---- names ---- */

/* "naive", "shared-objects", "greedy-size", "greedy-conflicts", "search", "exact", "best". */
const char *tether_plan_algorithm_name(tether_plan_algorithm a);
int tether_plan_algorithm_parse(const char *name, tether_plan_algorithm *out);

/* ---- problem ---- */

int tether_plan_problem_init(tether_plan_problem *p);
void tether_plan_problem_close(tether_plan_problem *p);
/* Copies the pool. Checks the name, scope, alignment, limits; duplicates are an error. */
int tether_plan_problem_add_pool(tether_plan_problem *p, const tether_plan_pool *pool);
/* Copies the buffer (name, pool names, pin). Checks everything that can be checked alone
 * (size, alignment, interval, texture extent); references to pools are checked when planning.
 * *index_out (may be NULL) receives the buffer's index. */
int tether_plan_problem_add_buffer(tether_plan_problem *p, const tether_plan_buffer *buffer,
                                   int *index_out);
/* Names operators 0..n-1 (copies; replaces earlier names). */
int tether_plan_problem_set_operators(tether_plan_problem *p, const char *const *names, int n);
/* Adds a caller-provided graph input or output (a copy) for the pictures. */
int tether_plan_problem_add_io(tether_plan_problem *p, const char *name, tether_plan_kind kind,
                               int32_t first, int32_t last, int64_t size);
/* Removes every pool (buffers stay); used to replace pools given on a command line. */
void tether_plan_problem_clear_pools(tether_plan_problem *p);
/* Index of a pool / buffer by name, or -1. */
int tether_plan_problem_find_pool(const tether_plan_problem *p, const char *name);
int tether_plan_problem_find_buffer(const tether_plan_problem *p, const char *name);

/* Parses "name:scope:capacity" as given to --pool. scope is global, texture or texture:weight
 * (so a texture pool reads "gpu:texture:0"); capacity is bytes with an optional K/M/G suffix
 * (powers of 1024) or "unbounded" (= 0). Texture pools may append ":WxH" device limits
 * ("gpu:texture:0:8192x8192"). name_buf must hold TETHER_POOL_NAME_MAX bytes; pool->name points
 * into it. */
int tether_plan_pool_parse(const char *spec, tether_plan_pool *pool, char *name_buf);

/* ---- buffer-list JSON (format in docs/planner.md) ---- */

/* Adds the pools and buffers of a buffer-list JSON text to p (which must be initialised; on
 * failure p is left empty). opts (may be NULL) receives "options" from the file on top of its
 * current values. Errors name the buffer/field. */
int tether_plan_problem_from_json(tether_plan_problem *p, tether_plan_options *opts,
                                  const char *text);
int tether_plan_problem_load(tether_plan_problem *p, tether_plan_options *opts, const char *path);

/* ---- planning ---- */

void tether_plan_options_init(tether_plan_options *o);

/* Plans p with o->algorithm (NULL = defaults). On failure *out is zeroed (nothing to close) and
 * the error names the buffer, its size and the free space of each candidate pool. */
int tether_plan_run(const tether_plan_problem *p, const tether_plan_options *o, tether_plan *out);
void tether_plan_close(tether_plan *plan);

/* Runs every algorithm except best (rows[TETHER_PLAN_ALGORITHM_COUNT - 1] entries, in enum
 * order) and returns how many rows were written. A failing algorithm gets status/error. */
int tether_plan_compare(const tether_plan_problem *p, const tether_plan_options *o,
                        tether_plan_summary *rows, int max_rows);

/* Max over time of the bytes of planned 1D-sized buffers that are live together, over every
 * pool (alias groups counted once; texture-scope buffers excluded unless include_textures).
 * Any plan's total of 1D pool sizes is >= this value when include_textures is false and no
 * texture buffer falls back. */
int tether_plan_lower_bound(const tether_plan_problem *p, const tether_plan_options *o,
                            bool include_textures, int64_t *out);

/* Checks plan against the problem and options it was made for (o NULL = defaults), re-deriving
 * every rule of a valid plan (docs/planner.md) without the planning code: buffers live at the
 * same time do not overlap in a pool, alignments, capacities, pins, candidate pools, alias groups
 * sharing storage, texture images (scope, dtype, users, device limits) and the reported sizes and
 * totals. TETHER_OK, or TETHER_ERR_INTERNAL with "invalid plan (ALGORITHM): REASON" in
 * tether_last_error(). tether_plan_run calls it on every plan it returns in builds without
 * NDEBUG (a failure there is returned as the run's error). */
int tether_plan_validate(const tether_plan_problem *p, const tether_plan_options *o,
                         const tether_plan *plan);

/* ---- outputs ---- */

/* The plan as JSON text (format in docs/planner.md). */
int tether_plan_to_json(const tether_plan_problem *p, const tether_plan *plan, char **out);
/* When no plan fits: {"fits": false, "error": why, "operators": [...], "pools": [name, scope,
 * capacity], "buffers": [name, scope, size, first, last]} (`--json` of a plan that fails). */
int tether_plan_problem_error_json(const tether_plan_problem *p, const char *why, char **out);
/* An SVG timeline: x = operator index (with the operators' names when the problem has them),
 * y = offset, one lane per pool, one <rect> per placed buffer with a <title> holding its name,
 * a lane of the graph inputs/outputs left to the caller, axis labels and a legend. */
int tether_plan_to_svg(const tether_plan_problem *p, const tether_plan *plan, char **out);
/* When no plan fits: the demand picture. For every operator the buffers live there stacked (by
 * bytes, as if nothing were fragmented), each global pool's capacity and their sum as lines, the
 * operators where the demand exceeds them marked, `why` (the planner's message) as the title.
 * Operator names on the axis and caller-provided inputs/outputs as for tether_plan_to_svg. */
int tether_plan_problem_to_svg(const tether_plan_problem *p, const char *why, char **out);
/* Writes text to a file; TETHER_ERR_IO naming the path on failure. */
int tether_plan_write_file(const char *path, const char *text);
/* The human report: per pool size, lower bound and ratio, fallbacks, images, and (rows != NULL)
 * the table of every algorithm's result. */
int tether_plan_report(FILE *out, const tether_plan_problem *p, const tether_plan *plan,
                       const tether_plan_summary *rows, int nrows);

/* ---- command line ---- */

/* `plan-buffers FILE [--planner NAME] [--pool name:scope:capacity]... [--svg OUT.svg] [--json]
 * [--seed N] [--budget N] [--help]`: plans a buffer-list JSON file, prints the report (or with
 * --json the plan JSON) on stdout; --json=FILE writes the plan JSON to FILE. argv[0] is the command
 * name. Returns a process exit code: 0 ok, 1 planning failed, 2 bad usage/input (one line
 * "plan-buffers: <reason>" on stderr). */
int tether_cmd_plan_buffers(int argc, char **argv);

/* The shared back half of the plan commands, for `tether plan MODEL`: parses only options
 * (--planner, --pool, --svg, --json, --seed, --budget; a positional argument is an error) from
 * argv[first..argc), plans `problem` (whose pools are replaced by --pool ones when given) and
 * prints like tether_cmd_plan_buffers. `prog` prefixes error lines. Returns an exit code. */
int tether_plan_cli(const char *prog, tether_plan_problem *problem, int argc, char **argv,
                    int first);

#ifdef __cplusplus
}
#endif
#endif /* TETHER_PLANNER_H */
