/*
 * cmocka helper of the planner tests (see checker.h): every plan goes through the library's
 * independent checker, tether_plan_validate.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "checker.h"
#include "tether/crt/error.h"

void assert_plan_valid(const tether_plan_problem *p, const tether_plan_options *o,
                       const tether_plan *plan) {
    if (tether_plan_validate(p, o, plan) != TETHER_OK) {
        fail_msg("%s", tether_last_error());
    }
}
