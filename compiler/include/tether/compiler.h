/*
 * tether compiler: model file -> IR -> passes -> memory plan -> C code -> built artifact.
 *
 * The stages are usable one by one (tests, the ONNX front end, the CLI) or all at once through
 * tether_compile_model, which writes an artifact directory (docs/codegen.md):
 *
 *   tether_model_load        JSON model (+ weights .bin) into a tether_ir_graph (tether/ir.h)
 *   tether_passes_run        constant folding, batch-norm folding, epilogue fusion, dead nodes
 *   tether_memplan_build     workspace offsets through the planner (tether/planner.h)
 *   tether_interp_run        the reference interpreter (ground truth, `tether run --reference`)
 *   tether_codegen_c         C source + header (+ params blob) for an ABI and an interface
 *   tether_codegen_opencl    or: OpenCL C kernels + launch sequence + params blob
 *   tether_build_artifact    compiles for a target profile, measures sizes and static stack
 *
 * Ownership: every output struct owns malloc'd memory and has a matching *_close/free function;
 * closing a zeroed struct is safe. Errors: int status (0 ok, negative tether_status) with the
 * message in tether_last_error(); loading errors name the file, the node and the problem.
 */
#ifndef TETHER_COMPILER_H
#define TETHER_COMPILER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tether/crt/abi.h"
#include "tether/ir.h"
#include "tether/planner.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- model loading ---------------------------------------------------------------------- */

/* Loads a model file into g (initialised here; close with tether_ir_close, also on failure).
 * Format by extension: .json = tether JSON model (docs/model-format.md), others as registered
 * with tether_model_register_loader. The graph is inferred.
 * Error messages start with the file name. */
int tether_model_load(const char *path, tether_ir_graph *g);

/* A front end for another model format (the ONNX importer): fills and infers g, or returns an
 * error with g closed. */
typedef int (*tether_model_loader)(const char *path, tether_ir_graph *g);

/* Makes tether_model_load (and so `tether compile`/`tether plan`) read files ending in `ext`
 * (".onnx") with `fn`. Up to 8 extensions; registering one again replaces its loader. Not
 * thread-safe: register at start-up (the CLI's main does it for the front ends it links). */
int tether_model_register_loader(const char *ext, tether_model_loader fn);

/* ---- load options (what a front end may need beyond the file) ------------------------------ */

/* `--input-shape NAME=D0xD1x...`: the shape of graph input NAME, fixing its dynamic dimensions
 * (ONNX symbolic or unknown extents). For formats without dynamic dimensions (JSON) the given
 * shape must equal the model's. */
typedef struct tether_model_input_shape {
    char name[128];
    int ndim;
    int64_t shape[TETHER_IR_MAX_NDIM];
} tether_model_input_shape;

/* Parses "NAME=1x3x224x224" ("NAME=" alone is a scalar); TETHER_ERR_INVALID_ARG with a message
 * naming the spec when it does not parse or an extent is < 1. */
int tether_model_input_shape_parse(const char *spec, tether_model_input_shape *out);

/* A tensor value known when the model is loaded (test data, `tether run --in`). Any dtype; the
 * front end converts what it binds. data is borrowed for the duration of the load. */
typedef struct tether_model_value {
    DLDataType dtype;
    int ndim;
    int64_t shape[TETHER_IR_MAX_NDIM];
    const void *data;
    size_t nbytes;
} tether_model_value;

typedef struct tether_model_load_options {
    const tether_model_input_shape *input_shapes; /* may be NULL */
    int ninput_shapes;
    /* Values of the model's graph inputs in the model's input order (ONNX: graph inputs that are
     * not initializers); entries with data NULL are unknown. A front end turns an input that an
     * operator needs as a constant (a Reshape's shape, Clip's min/max, Squeeze/Unsqueeze/
     * ReduceMean axes, Pad's pads) into a constant with this value, drops it from the graph
     * inputs and sets input_bound[i] = 1 (when input_bound is not NULL; ninput_values entries).
     * Every other input stays a run-time input. */
    const tether_model_value *input_values;
    int ninput_values;
    unsigned char *input_bound;
    /* NULL: input_values are in the model's input order. Else ninput_values names: value j
     * binds the graph input named input_names[j] (a name no input has binds nothing), as
     * `tether run --in NAME=FILE` and .npz archives give them. */
    const char *const *input_names;
    /* The custom-operator registry (tether/custom_ops.h, `--custom-ops`): nodes of its domains
     * become CUSTOM nodes; the loaded graph points at it (it must outlive the graph). NULL =
     * none. */
    const struct tether_custom_registry *custom_ops;
    /* The most iterations a run-time ONNX Loop whose trip count has no bound at compile time may
     * run when it has scan outputs (`--loop-max N`): their planned rows. 0 = none (such a Loop is
     * refused, naming it and this option); a loop that runs past it fails with TETHER_ERR_LIMIT
     * at run time, never writing past the rows. */
    int64_t loop_max;
} tether_model_load_options;

/* tether_model_load with options (NULL = none). Every input_shapes entry must name a graph input
 * of the loaded model and equal its final shape, else an error naming the input. */
int tether_model_load_with(const char *path, const tether_model_load_options *o,
                           tether_ir_graph *g);

/* A front end that understands load options; registered like tether_model_loader (one registry
 * for both kinds). o is never NULL when called. */
typedef int (*tether_model_loader_with)(const char *path, const tether_model_load_options *o,
                                        tether_ir_graph *g);
int tether_model_register_loader_with(const char *ext, tether_model_loader_with fn);

/* The full text of the last error when it did not fit tether_last_error() (TETHER_ERROR_MSG_MAX
 * bytes), e.g. an ONNX model's list of every unsupported operator; otherwise tether_last_error()
 * itself. Per thread. Front ends call tether_set_error_detail right after tether_set_error; the
 * detail is dropped as soon as a later error replaces the message it belongs to. */
const char *tether_error_detail(void);
void tether_set_error_detail(const char *text);

/* Parses JSON model text. `source` names it in messages; `weights_dir` is where a "weights"
 * file named in the model is looked up (NULL = current directory). */
int tether_model_parse_json(const char *text, const char *source, const char *weights_dir,
                            tether_ir_graph *g);

/* Writes g as a JSON model plus its weights file (weights_file is stored by base name). */
int tether_model_save_json(const tether_ir_graph *g, const char *json_path,
                           const char *weights_path);

/* ---- passes -------------------------------------------------------------------------------- */

typedef struct tether_pass_options {
    bool fold_constants;  /* nodes whose inputs are all constants become constants */
    bool fold_batch_norm; /* batch_norm after conv2d/dense merges into its weights and bias */
    bool fuse_epilogues;  /* bias add / activation / residual add fuse into conv/dense/matmul */
    bool eliminate_dead;  /* nodes that no graph output depends on are removed */
    /* > 0: a padded conv2d whose output plane has at least this many elements reads an
     * explicitly padded copy of its input (a pad node before it), so the blocked kernel has no
     * border columns
     * (0: the compile driver sets the schedule's vector width when the passes run; < 0: off) */
    int pad_conv_min_width;
    /* QDQ models: dequantize -> conv2d/matmul [-> relu/clip] -> quantize becomes qconv/qmatmul
     * (docs/quantization.md); runs before constant folding */
    bool integer_ops;
} tether_pass_options;

void tether_pass_options_init(tether_pass_options *o); /* everything on */

/* Runs the enabled passes in the order above (dead-node elimination last) and re-infers. */
int tether_passes_run(tether_ir_graph *g, const tether_pass_options *o);
int tether_pass_fold_constants(tether_ir_graph *g);
int tether_pass_fold_batch_norm(tether_ir_graph *g);
int tether_pass_fuse_epilogues(tether_ir_graph *g);
int tether_pass_eliminate_dead(tether_ir_graph *g);
int tether_pass_pad_convs(tether_ir_graph *g, int min_width);
int tether_pass_integer_ops(tether_ir_graph *g);

/* ---- memory planning ------------------------------------------------------------------------ */

/* Name of the one workspace pool of generated code when no pools are given. */
#define TETHER_WORKSPACE_POOL "workspace"

/* Where generated code keeps its tensors (`tether compile --pool/--pin/--plan-inputs/
 * --plan-outputs`, the ExecuTorch memory-planning seed's mem_id and alloc_graph_input/output).
 * No pools: one unbounded "workspace" pool, static inside the RPC entry. Pools (fastest first,
 * global scope): the planner places every tensor in the first pool it fits and spills to the
 * next; the generated entry takes one buffer per pool (C interface: a struct member; packed and
 * unpacked RPC entries: one argument per pool after the outputs). */
#define TETHER_MEMORY_MAX_POOLS 8

typedef struct tether_memory_options {
    const tether_plan_pool *pools; /* ordered, fastest first; names must stay valid */
    int npools;                    /* 0 = the default workspace; at most TETHER_MEMORY_MAX_POOLS */
    const char *const *pins;       /* "TENSOR=POOL": that tensor goes to that pool only */
    int npins;
    bool plan_inputs;  /* graph inputs live in the pools (the entry copies them in unless the
                          caller wrote them in place) */
    bool plan_outputs; /* graph outputs live in the pools (copied out when a pointer is given) */
    const char *params_pool; /* with a params blob: the device pool the runner puts it in (an
                                MCU's "code" memory keeps weights out of SRAM); NULL = default */
} tether_memory_options;

void tether_memory_options_init(tether_memory_options *o);

typedef struct tether_memplan_pool {
    char name[TETHER_POOL_NAME_MAX];      /* as given to --pool */
    char cname[TETHER_POOL_NAME_MAX + 8]; /* C identifier: lower case, '.' and '-' become '_',
                                             a C keyword gets a trailing '_' */
    int64_t capacity;                     /* bytes, TETHER_PLAN_UNBOUNDED = none */
    int64_t size;                         /* bytes the generated code needs, a multiple of 16 */
    int64_t lower_bound;                  /* most bytes live at once in it under this plan */
    int ntensors;                         /* tensors placed in it */
} tether_memplan_pool;

typedef struct tether_memplan {
    int ntensors;
    int64_t *offset;        /* per tensor: byte offset in its pool, -1 = not planned */
    int *pool;              /* per tensor: index into pools, -1 = not planned */
    int64_t workspace_size; /* bytes of all pools together, each a multiple of 16 */
    int64_t naive_size;     /* bytes without any reuse (for reports) */
    char algorithm[32];     /* planner algorithm that produced the offsets */
    int npools;             /* >= 1 */
    tether_memplan_pool *pools;
    bool pool_args;    /* pools were given: the entries take them (else one static workspace) */
    bool plan_inputs;  /* graph inputs are planned (those with bytes and not aliased) */
    bool plan_outputs; /* graph outputs are planned */
    int nspilled;      /* tensors not pinned that went to a pool after the first */
    char *plan_json;   /* pools given: the planner's plan (memory_plan.json) and SVG timeline */
    char *plan_svg;
} tether_memplan;

/* Plans every intermediate tensor (not graph inputs/outputs, constants or aliases) with the
 * planner's `algorithm` name ("best", "greedy-size", ...; NULL = "best"). */
int tether_memplan_build(const tether_ir_graph *g, const char *algorithm, tether_memplan *out);
/* The same with pools, pins and planned graph inputs/outputs (m NULL = none). Errors name the
 * tensor, pool or option: an unknown pool in a pin, a pin of a tensor the plan does not place,
 * a tensor that fits no pool (with the free space of each). Every plan is checked with
 * tether_plan_validate before it is returned. */
int tether_memplan_build_pools(const tether_ir_graph *g, const char *algorithm,
                               const tether_memory_options *m, tether_memplan *out);
void tether_memplan_close(tether_memplan *p);

/* ---- reference interpreter ------------------------------------------------------------------ */

/* Runs g (inferred) on host float buffers: inputs[i] for graph input i, outputs[i] receives
 * graph output i (dense row-major, sizes from the tensor shapes). Plain, obviously-correct
 * loops; allocates its intermediates. A graph input or output that is not float32 is refused
 * (TETHER_ERR_INVALID_ARG): such graphs go through tether_interp_run_typed. */
int tether_interp_run(const tether_ir_graph *g, const float *const *inputs, float *const *outputs);
/* The same for graphs of any element types: each buffer holds its tensor's elements in its
 * element type (bool one byte 0/1, float16/bfloat16 as their 16-bit patterns). Floating point
 * computes in double where no float32 kernel applies, integers exactly (wrapping like numpy). */
int tether_interp_run_typed(const tether_ir_graph *g, const void *const *inputs,
                            void *const *outputs);

/* ---- C code generation ---------------------------------------------------------------------- */

typedef enum tether_interface {
    TETHER_INTERFACE_PACKED = 0, /* entry <prefix>_main in the chosen ABI */
    TETHER_INTERFACE_C = 1,      /* plus <prefix>_run(inputs*, outputs*, workspace*) + header */
} tether_interface;

int tether_interface_parse(const char *name, tether_interface *out);
const char *tether_interface_name(tether_interface i);

/* The schedule knobs of the generated C kernels (docs/codegen.md, "Schedules"): every tile size
 * is a named parameter with a default, so a tuner can search them. Blocked kernels use GCC
 * vector extensions (portable: the target's compiler maps them to SSE/AVX/AVX-512, NEON, or
 * scalar code); vector_width 0 keeps every kernel a plain scalar loop nest (MCU targets). */
typedef struct tether_schedule {
    int vector_width;     /* floats per vector: 0 (scalar loops), 4, 8 or 16; -1 = the target's
                             (tether_compile_*: 16 for x86-64-v4, 8 other x86-64, 4 aarch64, 0
                             MCU; tether_codegen_c alone: 8) */
    int conv_oc_block;    /* conv2d: output channels per register block (MR), 1..8; 0 (the
                             default) = by the register file: 8 at vector width 16 (AVX-512's
                             32 registers), else 4 */
    int conv_col_vectors; /* conv2d: vectors of output columns per register block (NR), 1..4,
                             default 2 */
    int dw_col_vectors;   /* depthwise conv2d: vectors of columns per block, 1..8, default 4 */
    int gemv_rows;        /* dense with transposed weights: weight rows per block, 1..8,
                             default 4 */
    int gemm_rows;        /* matmul: rows of A per register block (MR), 1..8; 0 (the default)
                             = 8 at vector width 16, else 4 */
    int gemm_col_vectors; /* matmul: vectors of columns per register block (NR), 1..4, default 2 */
    int channel_block;    /* activations between convolutions in a channel-blocked layout
                             (NCHW<b>c: b channels contiguous, b the widest of this, /2, /4 >= 4
                             dividing the channel count): -1 (the default) = the vector width,
                             0 = plain NCHW everywhere, else 4, 8 or 16 */
    int nchwc_oc_vectors; /* channel-blocked conv2d: vectors of output channels per register
                             block, 1..8; 0 (the default) = up to 4 */
    int nchwc_pixels;     /* channel-blocked conv2d: output pixels per register block, 1..16; 0
                             (the default) = 16 accumulators / nchwc_oc_vectors, at most 8 */
    int nchwc_dw_pixels;  /* channel-blocked depthwise conv2d: output pixels per block, 1..16,
                             default 8 */
    int local_size;       /* OpenCL backend, a node schedule's: the work-group size of its
                             launch, 1..1024; 0 (the default) = the backend's (--local-size) */
    /* OpenCL GPU kernels (docs/codegen.md, "GPU kernels"); 0 = chosen from the shape and the
     * device's limits */
    int ocl_split_k; /* dense: work-items that split one output's K (power of two, 1..1024) */
    int ocl_tile_m;  /* conv as GEMM: output channels per work-group tile, 16, 32 or 64 */
    int ocl_tile_n;  /* conv as GEMM: output pixels per work-group tile, 16, 32 or 64 */
} tether_schedule;

void tether_schedule_init(tether_schedule *s);

/* ---- workloads and per-node schedules (`tether tune`, docs/tune.md) ------------------------
 * A workload is what a kernel's code depends on: the operator, its attributes and epilogue, and
 * the shapes and constness of its operands. Nodes with the same workload key get the same
 * kernel, so a schedule tuned for one serves every such node of every model. */
#define TETHER_WORKLOAD_MAX 512

/* The workload key of node `node` of an inferred graph into buf (n >= TETHER_WORKLOAD_MAX holds
 * every key but that of a concat of dozens of inputs: TETHER_ERR_LIMIT), e.g. "conv2d
 * i0=1x64x25x5 i1=c64x1x3x3 i2=c64 y=1x64x25x5 k3x3 s1x1 p1,1,1,1 d1x1 g64 act=relu,0,0,6".
 * The key does not include the layouts the emitter picks (channel-blocked or plain, texture or
 * buffer): nodes of one key in different layouts share a record. */
int tether_workload_key(const tether_ir_graph *g, int node, char *buf, size_t n);
/* Whether the schedule knobs change node's kernel (conv2d, dense, matmul). */
bool tether_workload_tunable(const tether_ir_graph *g, int node);

/* A schedule for the nodes of one workload. Only the per-kernel knobs are taken from it;
 * vector_width and channel_block stay the module's (they fix the tensors' layouts). */
typedef struct tether_node_schedule {
    const char *workload; /* a tether_workload_key */
    tether_schedule schedule;
} tether_node_schedule;

typedef struct tether_codegen_options {
    tether_abi abi;
    tether_interface interface;
    const char *prefix; /* C identifier prefix, default "tether_model" */
    bool link_params;   /* true: weights as const arrays; false: <prefix>_set_params(blob) */
    tether_schedule schedule;
    const tether_node_schedule *node_schedules; /* per-workload overrides (tuning records) */
    int nnode_schedules;
    /* Profiling build (docs/profile.md): TETHER_PROFILE_TIME reads the runtime's clock
     * (tether_platform_cycles) before and after each node's kernel and adds <prefix>_profile,
     * which copies the table of the last call out; TETHER_PROFILE_STACK also asks the MCU
     * firmware for each node's stack bytes (tether_mcu_profile_stack). 0 = none (default). */
    int profile;
    /* custom operators call the registry's "mcu" C implementation when it has one (set by the
     * compile driver for static, firmware targets; docs/custom-ops.md) */
    bool custom_mcu;
} tether_codegen_options;

#define TETHER_PROFILE_NONE  0
#define TETHER_PROFILE_TIME  1
#define TETHER_PROFILE_STACK 2

void tether_codegen_options_init(tether_codegen_options *o);

/* One function of a generated module (as listed in its registry). */
typedef struct tether_codegen_func {
    char *name;
    tether_abi abi;
    int num_args;
} tether_codegen_func;

typedef struct tether_codegen_output {
    char *source;               /* <prefix>.c */
    char *header;               /* <prefix>.h */
    unsigned char *params;      /* params blob (link_params false), else NULL */
    size_t params_bytes;        /* bytes of weights, linked or in the blob */
    tether_codegen_func *funcs; /* every registry entry; the entry function is funcs[0] */
    int nfuncs;
    int64_t workspace_size;
    const char *math_functions; /* libm functions the source calls, comma-separated */
    int ntunable, ntuned;       /* kernels with schedule knobs / with a node schedule applied */
} tether_codegen_output;

int tether_codegen_c(const tether_ir_graph *g, const tether_memplan *plan,
                     const tether_codegen_options *o, tether_codegen_output *out);
void tether_codegen_output_close(tether_codegen_output *out);

/* ---- OpenCL code generation (backend "opencl"; docs/codegen.md, "OpenCL backend") ----------
 *
 * One OpenCL C kernel per operator of a graph after the passes (aliases and empty tensors need
 * none), the launch sequence with every memory object (metadata.json) and the weights blob. The
 * host runs it (`tether run DIR`): upload the source (the device builds it), allocate every memory
 * object in its scope, copy params.bin, launch the steps in order, read the outputs back.
 * Ownership as for C code generation: tether_opencl_output_close frees everything.
 */
typedef enum tether_backend {
    TETHER_BACKEND_C = 0,      /* C source built into a library (default) */
    TETHER_BACKEND_OPENCL = 1, /* OpenCL C kernels + launch sequence */
} tether_backend;

int tether_backend_parse(const char *name, tether_backend *out); /* "c", "opencl" */
const char *tether_backend_name(tether_backend b);

typedef struct tether_opencl_options {
    const char *prefix;       /* kernel name prefix, default "tether_model" */
    bool texture_weights;     /* constant conv weights as texture:weight images (OIHW4o) */
    int local_size;           /* work-group size of the 1D launches, 0 = 64 */
    bool texture_activations; /* activations between texture-capable kernels in texture images
                                 (the storage-scope pass; docs/codegen.md) */
    int64_t image_max_width;  /* the device's image2d limits in texels (0 = no limit): a tensor
                                 over them stays a buffer */
    int64_t image_max_height;
    const tether_node_schedule *node_schedules; /* per-workload local_size (tuning records) */
    int nnode_schedules;
    /* GPU kernels (docs/codegen.md, "GPU kernels"): split-K dense, conv as tiled GEMM,
     * vectorised depthwise. legacy_kernels keeps the one-work-item-per-output kernels (the
     * baseline; also TETHER_OPENCL_LEGACY=1 in the environment of `tether compile`). */
    bool legacy_kernels;
    /* A general (not depthwise) convolution takes the tiled-GEMM kernel only when its schedule
     * names tiles (ocl_tile_m/ocl_tile_n: `tether tune --backend opencl`) or when conv_gemm is
     * set; untuned it keeps the direct kernel, which was faster on the one GPU measured (an
     * H200, docs/codegen.md "GPU kernels"). */
    bool conv_gemm;
    int max_work_group_size; /* CL_DEVICE_MAX_WORK_GROUP_SIZE, 0 = unknown (256) */
    int wg_multiple;         /* preferred work-group size multiple, 0 = unknown (32) */
    int64_t local_mem_size;  /* CL_DEVICE_LOCAL_MEM_SIZE bytes, 0 = unknown (16 KiB) */
    int compute_units;       /* CL_DEVICE_MAX_COMPUTE_UNITS, 0 = unknown (16) */
    /* --precision fp16: the workspace, the params buffer (weights converted at compile time) and
     * the images in half, read and written with vload_half/vstore_half (core OpenCL C) and
     * read_imagef/write_imagef; arithmetic and accumulation in float; graph inputs and outputs
     * float32 (docs/codegen.md "Half precision"). Not with custom operators. */
    bool fp16;
    /* cl_khr_fp64 on the device (float64 tensors, docs/codegen.md "OpenCL element types"): 1 it
     * has it, -1 it lacks it (a float64 tensor is refused at compile time, naming it), 0 unknown
     * (the kernel source then stops the device's build with an #error naming the tensor). */
    int fp64;
} tether_opencl_options;

void tether_opencl_options_init(tether_opencl_options *o);

typedef struct tether_opencl_output {
    char *source;          /* <prefix>.cl */
    char *metadata;        /* metadata.json text: memory objects and launch steps */
    unsigned char *params; /* params.bin: buffer weights, then image texels; NULL when empty */
    size_t params_bytes;
    int nkernels; /* kernels in the source = launch steps */
    int nimages;  /* texture:weight images */
    int64_t workspace_size;
    int ntextures;         /* texture images holding activations */
    int ntexture_tensors;  /* activations placed in them */
    int nfallbacks;        /* activations the storage-scope pass chose that stayed buffers (over
                              the image limits) */
    int64_t texture_bytes; /* bytes of the texture images (4 floats per texel) */
    int ntunable, ntuned;  /* launches / launches with a tuned work-group size */
    char *plan_json;       /* with texture_activations: the memory plan (workspace and texture
                              pools) as the planner writes it, and its SVG timeline; else NULL */
    char *plan_svg;
} tether_opencl_output;

/* A node the backend has no kernel for fails the whole call with TETHER_ERR_UNSUPPORTED naming
 * every such node (the full list in tether_error_detail()); nothing falls back silently. */
int tether_codegen_opencl(const tether_ir_graph *g, const tether_memplan *plan,
                          const tether_opencl_options *o, tether_opencl_output *out);
void tether_opencl_output_close(tether_opencl_output *out);

/* ---- targets, build and reports ---------------------------------------------------------------
 */

typedef enum tether_target_kind {
    TETHER_TARGET_SHARED = 0, /* .so for upload to tetherd (dlopen) */
    TETHER_TARGET_STATIC = 1, /* .a of relocatable objects for firmware */
} tether_target_kind;

typedef struct tether_target {
    const char *name;   /* "x86_64-linux", "cortex-m3", ... */
    const char *cc;     /* compiler executable */
    const char *cflags; /* target flags (-mcpu=... -mthumb ...) */
    const char *ar;     /* archiver of static targets (NULL for shared ones) */
    tether_target_kind kind;
    const char *description;
    /* MCU targets: what the code needs of the core, in the tokens of HELLO's cpu_features on a
     * board (dsp, fp.sp, fp.dp, hard-float, mve, mve.fp; docs/boards.md); "" = nothing beyond
     * the core's base instruction set. NULL for the Linux targets. */
    const char *features;
} tether_target;

/* The built-in profiles (docs/codegen.md), NULL-terminated by count. */
const tether_target *tether_targets(int *count);
/* Finds a profile by name (TETHER_ERR_NOT_FOUND listing the known names). */
int tether_target_find(const char *name, const tether_target **out);
/* True when the target's compiler is installed. */
bool tether_target_available(const tether_target *t);

typedef struct tether_elf_sizes {
    uint64_t text, data, bss; /* as `size` (berkeley) reports them */
    uint64_t code;            /* the executable part of text (instructions, no constants) */
} tether_elf_sizes;

/* Sums allocated sections of an ELF file (object, archive member-less; .so or .o) like
 * `size`: text = executable + read-only allocated, data = writable PROGBITS, bss = NOBITS. */
int tether_elf_size(const char *path, tether_elf_sizes *out);

/* Static stack analysis from GCC's -fstack-usage (.su) and -fcallgraph-info=su (.ci) files. */
typedef struct tether_stack_report {
    int64_t bytes;      /* worst-case stack of the root function including its callees */
    bool bounded;       /* false when recursion, dynamic frames or unknown callees make it so */
    char reason[160];   /* why it is unbounded ("" when bounded) */
    char path[512];     /* the worst call chain, "a -> b -> c" */
    char excluded[256]; /* reachable externals counted as 0 bytes (memcpy, expf, ...,
                           tether_set_error on argument errors), comma-separated */
} tether_stack_report;

/* Computes the worst-case stack of `root` from the given .ci files (each one is the
 * -fcallgraph-info=su dump of one translation unit). memcpy/memset, the libm functions of
 * generated code and tether_set_error (reached only on argument errors) are external leaves
 * counted as 0 bytes and listed in `excluded`; any other unknown callee, an indirect call,
 * recursion or a dynamic frame makes the result unbounded. */
int tether_stack_analyze(const char *const *ci_files, int nfiles, const char *root,
                         tether_stack_report *out);

/* The same for code built for `target`: gcc's local aliases (foo.localalias) are the functions
 * they alias, and every external the code reaches (memcpy/memset, libm, the soft-float and
 * division helpers of libgcc, and what they call in turn) gets its real frame and callees from
 * the archives the target's toolchain links (libgcc.a, libm.a, the C library: newlib-nano for
 * the bare-metal profiles, glibc for Linux), disassembled with the toolchain's objdump (once per
 * process; docs/codegen.md). Only tether_set_error (the runtime's, reached on argument errors)
 * is still counted as 0 bytes and listed in `excluded`; an external no library defines, an
 * indirect call or a dynamic frame inside a library function makes the result unbounded. */
int tether_stack_analyze_target(const char *const *ci_files, int nfiles, const char *root,
                                const tether_target *target, tether_stack_report *out);

/* Worst-case stack of one function of the target's libraries (e.g. "__aeabi_fdiv", "expf")
 * including everything it calls, as tether_stack_analyze_target counts it; `path` is its worst
 * chain. TETHER_ERR_NOT_FOUND when no library of the target defines it. */
int tether_stack_library_function(const tether_target *target, const char *name,
                                  tether_stack_report *out);

/* opt_level: the target's default (tether_build_opt_level). */
#define TETHER_OPT_DEFAULT (-2)

typedef struct tether_build_options {
    const char *target; /* profile name, default "x86_64-linux" */
    int opt_level;      /* 0..3, -1 = "s", TETHER_OPT_DEFAULT: 3 on hosted targets (speed),
                           2 on MCU targets (speed with an eye on size) */
    /* The CPU to tune and generate code for, on top of the target profile: a -march value on
     * hosted targets ("x86-64-v3", "x86-64-v4", "armv8.2-a+fp16+dotprod"), a -mcpu value on
     * MCU targets ("cortex-m7"); NULL or "" = the profile's baseline. A device's HELLO says its
     * own (tether info: cpu); code built for a CPU the device lacks is refused at upload. */
    const char *cpu;
    bool keep_objects;
    /* A float64 tensor on an MCU target whose core has no double-precision FPU (features
     * without "fp.dp": cortex-m0/m3/m4/m33, rv32imac) is refused at compile time naming the
     * tensor, unless this allows libgcc's software double arithmetic (`--soft-float64`: correct,
     * but tens of cycles per operation and more code). Hosted targets always compute float64. */
    bool soft_float64;
} tether_build_options;

/* The compiler flags a CPU value becomes on `target` (NULL = "x86_64-linux"), space separated
 * into out: "" for NULL/"" (the baseline), "-march=VALUE" on hosted targets, "-mcpu=VALUE" on MCU
 * targets; on x86-64 the suffixes +avxvnni and +avx512vnni (the int8 dot products no psABI level
 * includes) become -mavxvnni and -mavx512vnni (with -mavx512vl below x86-64-v4), e.g.
 * "x86-64-v3+avxvnni" -> "-march=x86-64-v3 -mavxvnni". TETHER_ERR_INVALID_ARG for a value that is
 * not letters, digits and . _ + - or names an unknown x86-64 extension. */
int tether_cpu_flags(const char *target, const char *cpu, char *out, size_t n);
/* The HELLO cpu_features tokens a device must have for code built for `cpu`, beyond what its
 * x86-64 level says ("avx512vnni avx512vl" for "x86-64-v4+avx512vnni"), into out; returns how
 * many +extensions cpu has (0: nothing beyond the level or an -march value), or an error code
 * (< 0) for an unknown extension. */
int tether_cpu_needs(const char *cpu, char *out, size_t n);
/* The CPU value code for a hosted device is compiled for, from its HELLO: `cpu` plus +avxvnni
 * (on x86-64-v3 and above) and +avx512vnni (x86-64-v4) when `features` names them; any other
 * cpu (aarch64's "armv8.2-a+dotprod", "" = the baseline) is taken as it is. */
void tether_cpu_for_device(const char *cpu, const char *features, char *out, size_t n);

/* The optimisation level a build uses: o->opt_level, or for TETHER_OPT_DEFAULT the target's. */
int tether_build_opt_level(const tether_build_options *o);

typedef struct tether_build_result {
    char library[256]; /* file name of the built library inside the directory */
    tether_elf_sizes sizes;
    tether_stack_report stack;
} tether_build_result;

/* Compiles <dir>/<prefix>.c for the target into <dir>/lib<prefix>.so or .a, collecting sizes
 * and the static stack of `entry`. The compiler's stderr is kept in <dir>/build.log. */
int tether_build_artifact(const char *dir, const char *prefix, const char *entry,
                          const tether_build_options *o, tether_build_result *out);

/* ---- interrupted builds (SIGINT, SIGTERM, SIGHUP) --------------------------------------------
 * The processes a build runs (gcc and what gcc starts: cc1, as, collect2, ld; ar, objdump) and
 * the artifact directory a compile is writing are registered while they exist, so that a program
 * that handles those signals ends and removes them before it ends itself. The tether CLI does:
 * a signal to the tether process alone (`kill PID`, a CI runner) ends every compiler it started,
 * removes the artifact directory the compile created (only the files it wrote into one that
 * existed before) and its temporary directories, then ends tether by the same signal (exit status
 * 128 + signal, 143 for SIGTERM).
 *
 * tether_build_isolate(true): every process the build starts from then on leads a process group
 * of its own, so one kill reaches what it starts in turn, and a signal meant for the program
 * (a terminal's Ctrl-C included) reaches the compilers only through tether_build_interrupt: call
 * it only with such a handler installed. Off by default (the compilers share the caller's process
 * group, as the Python package's do). On Linux the process also becomes the subreaper of what
 * they start, so it can reap a killed compiler's children at once.
 *
 * tether_build_interrupt(sig), for the handler (async-signal-safe, keeps errno): sends sig to
 * every registered process (its group when isolated), waits for them to end (SIGKILL after 5 s),
 * then removes what the compiles in progress wrote, as tether_compile_model does on failure. No
 * build starts in this process afterwards (it fails at once): end the process next. */
void tether_build_isolate(bool on);
void tether_build_interrupt(int sig);

/* ---- the whole pipeline --------------------------------------------------------------------- */

typedef struct tether_compile_options {
    tether_codegen_options codegen;
    tether_build_options build;
    tether_pass_options passes;
    const char *planner;                   /* planner algorithm name, NULL = "best" */
    const tether_model_load_options *load; /* tether_compile_model's loading, NULL = defaults */
    bool build_library;                    /* false: write sources, header and metadata only */
    tether_backend backend;                /* C (default) or OpenCL (then `opencl` applies) */
    tether_opencl_options opencl;          /* its prefix is codegen.prefix */
    tether_memory_options memory;          /* pools, pins, planned inputs/outputs (C backend) */
    /* With codegen.link_params, a library to build and more bytes of weights (constants) than
     * this, the weights go to a params blob instead (res->params_blob_auto): gcc takes minutes and
     * GBs over tens of MiB of initialisers. 0 (the default) links them at any size; the tether CLI
     * sets TETHER_PARAMS_LINK_MAX unless --params says which. */
    size_t params_link_max;
    /* A profiling build of the same artifact (`tether compile --profile`, docs/profile.md): C
     * backend, codegen.profile (TETHER_PROFILE_STACK on MCU targets, else _TIME); both backends,
     * metadata.json's "profile" object with the node list. */
    bool profile;
} tether_compile_options;

/* The size above which the tether CLI does not link weights unless told to (4 MiB). */
#define TETHER_PARAMS_LINK_MAX ((size_t)4 << 20)

/* Where the compiler says, once per process each, what it decided on the caller's behalf or what
 * will take long: weights moved to a params blob (params_link_max), or more than
 * TETHER_PARAMS_LINK_MAX bytes of weights linked into the C source (said before gcc starts).
 * One line "<who>: ..." each; f NULL (the default) = silent. The CLI passes stderr and
 * "tether <command>". Not thread-safe: set it at start-up. */
void tether_compile_set_notices(FILE *f, const char *who);

void tether_compile_options_init(tether_compile_options *o);

/* ---- tuning records (`tether tune`, docs/tune.md) -------------------------------------------
 * A tuning log is a JSON Lines file, one measurement per line:
 *   {"workload": KEY, "target": "x86_64-linux", "cpu": "x86-64-v4", "schedule": {knobs},
 *    "us": 12.5, "model": ..., "node": ..., "trial": N}
 * Lines are only ever appended, so a log survives an interrupted tune and resumes it. */
typedef struct tether_tune_record {
    char workload[TETHER_WORKLOAD_MAX];
    char target[32];
    char cpu[64];
    tether_schedule schedule;
    double us; /* median time of the node's kernel; < 0 = the candidate failed */
    char node[128];
    int trial;
} tether_tune_record;

typedef struct tether_tuning_log {
    tether_tune_record *records;
    int n, cap;
} tether_tuning_log;

/* Reads every record of path (a missing file is an empty log when missing_ok); a malformed
 * line is an error naming the line. tether_tuning_log_close frees the records. */
int tether_tuning_log_load(const char *path, bool missing_ok, tether_tuning_log *log);
void tether_tuning_log_close(tether_tuning_log *log);
/* Appends r to the log in memory and, when path is not NULL, as one line to the file. */
int tether_tuning_log_add(tether_tuning_log *log, const char *path, const tether_tune_record *r);
/* The fastest record of each workload measured for exactly this target and cpu, as node
 * schedules (*out malloc'd, workload strings point into log: keep it open while they are used). */
int tether_tuning_log_best(const tether_tuning_log *log, const char *target, const char *cpu,
                           tether_node_schedule **out, int *n);

/* Loads the log at path and points o->codegen.node_schedules at its best records for o's build
 * target (default x86_64-linux) and cpu ("" = baseline); *ns is malloc'd and must stay with the
 * open log until the compile is done (then free(*ns), tether_tuning_log_close(log)). */
struct tether_compile_options;
int tether_tuning_log_apply(const char *path, struct tether_compile_options *o,
                            tether_tuning_log *log, tether_node_schedule **ns);

typedef struct tether_compile_result {
    int nnodes_in, nnodes_out; /* before / after passes */
    int ntunable, ntuned; /* C backend: kernels with schedule knobs, and of them the ones a node
                             schedule (tuning log) applied to */
    int64_t workspace_size;
    int npools; /* C backend with --pool: the entry's pool arguments, in order (else 0) */
    struct {
        char name[TETHER_POOL_NAME_MAX];
        int64_t size; /* bytes the caller provides, 16-byte aligned */
    } pools[TETHER_MEMORY_MAX_POOLS];
    int nspilled; /* tensors placed past the first pool (not pinned) */
    size_t params_bytes;
    bool params_blob_auto;  /* the weights went to a params blob (options' params_link_max) */
    double codegen_seconds; /* model file -> C source (load, passes, plan, emit) */
    bool built;
    tether_build_result build;
    char entry[128];
} tether_compile_result;

/* Compiles a model file into the artifact directory `out_dir` (created if needed): sources,
 * header, params.bin (when not linked), the built library, metadata.json and report.json. On
 * failure nothing partial is left: files this call wrote are removed (and the directory when it
 * created it); so are they when a signal ends the program and its handler calls
 * tether_build_interrupt. */
int tether_compile_model(const char *model_path, const char *out_dir,
                         const tether_compile_options *o, tether_compile_result *res);

/* Same, from a graph already in memory (the ONNX front end, tests). g is modified by passes. */
int tether_compile_graph(tether_ir_graph *g, const char *out_dir, const tether_compile_options *o,
                         tether_compile_result *res);

/* After a compile with a tuning log: how many kernels with knobs got a tuned schedule, and when
 * some did not, which target/cpu the log does have records for. */
void tether_tuning_note(FILE *out, const tether_compile_result *res, const tether_tuning_log *log,
                        const struct tether_compile_options *o);

/* Prints the report table of an artifact directory's report.json. */
int tether_report_print(FILE *out, const char *artifact_dir);

#ifdef __cplusplus
}
#endif
#endif /* TETHER_COMPILER_H */
