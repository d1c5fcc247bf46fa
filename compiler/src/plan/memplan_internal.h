/*
 * tether compiler: the bridge between the IR and the planner's problem description (internal).
 */
#ifndef TETHER_COMPILER_MEMPLAN_INTERNAL_H
#define TETHER_COMPILER_MEMPLAN_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "tether/ir.h"
#include "tether/planner.h"

/* first[t]/last[t]: node indices where tensor t is written first / read last (-1 = never);
 * reads through an alias count for the alias's root. */
int tether__memplan_intervals(const tether_ir_graph *g, int32_t *first, int32_t *last);

/* True when tensor t lives in the workspace. */
int tether__memplan_plannable(const tether_ir_graph *g, int t);

/* Initialises p with the workspace pool and one buffer per plannable tensor; buffer_of[t] is
 * the buffer index of tensor t or -1. The caller closes p (also on failure). With texture_pool,
 * that pool is added second and a tensor t with texture_extent[2t] > 0 is a texture-scope
 * buffer of texture_extent[2t] x texture_extent[2t + 1] RGBA texels (falling back to the
 * workspace when over the pool's image limits). */
int tether__memplan_problem(const tether_ir_graph *g, tether_plan_problem *p, int *buffer_of,
                            const tether_plan_pool *texture_pool, const int64_t *texture_extent);

/* The same problem with memory options m: its pools (none: the workspace), planned graph
 * inputs/outputs and pins. pins_pools_later: the pools are replaced after this call (`tether
 * plan --pool`), so a pin's pool is checked when planning instead of here. */
struct tether_memory_options;
int tether__memplan_problem_memory(const tether_ir_graph *g, const struct tether_memory_options *m,
                                   bool pins_pools_later, tether_plan_problem *p, int *buffer_of);

#endif /* TETHER_COMPILER_MEMPLAN_INTERNAL_H */
