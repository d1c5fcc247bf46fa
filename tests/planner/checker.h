/*
 * An independent plan checker for the planner tests. It re-derives every rule of a valid plan
 * from the problem alone (it shares no code with compiler/planner/src): no two buffers live at
 * the same time overlap in the same pool, alignments, capacities, pins, candidate pools, alias
 * groups share storage, texture images match scope/dtype, cover their users and stay within
 * the device limits, and the reported sizes/totals agree with the placements.
 */
#ifndef TETHER_TEST_PLAN_CHECKER_H
#define TETHER_TEST_PLAN_CHECKER_H

#include <stdbool.h>

#include "tether/planner.h"

/* Returns true when the plan is valid; otherwise false with a reason in why (size n). */
bool plan_check(const tether_plan_problem *p, const tether_plan_options *o, const tether_plan *plan,
                char *why, size_t n);

/* cmocka helper: fails the test with the reason. */
void assert_plan_valid(const tether_plan_problem *p, const tether_plan_options *o,
                       const tether_plan *plan);

#endif
