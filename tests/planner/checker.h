/*
 * The planner tests' plan check: every plan a test produces goes through the planner library's
 * independent checker, tether_plan_validate (compiler/planner/src/validate.c), which re-derives
 * every rule of a valid plan from the problem alone.
 */
#ifndef TETHER_TEST_PLAN_CHECKER_H
#define TETHER_TEST_PLAN_CHECKER_H

#include "tether/planner.h"

/* cmocka helper: fails the test with tether_plan_validate's reason. */
void assert_plan_valid(const tether_plan_problem *p, const tether_plan_options *o,
                       const tether_plan *plan);

#endif
