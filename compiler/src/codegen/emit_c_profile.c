/*
 * The C emitter's profiling instrumentation (tether_codegen_options.profile, `tether compile
 * --profile`, docs/profile.md): the same kernels, schedules and plan as the plain artifact, with
 * a clock reading before and after each node's kernel call in the graph function, kept in a
 * static table of the module that the registry function <prefix>_profile copies out.
 *
 * What must stay true: profiling adds code only around the kernel calls of the graph function and
 * after the entries (the kernels are the plain build's, byte for byte); slot k of the table is
 * the k-th node that has a function (tether__c_node_has_function), in node order, which is the
 * order metadata.json's "profile" lists them (profile_meta.c); each slot is 3 uint64 words: the
 * clock before the kernel, after it, and the stack bytes the node used (0 unless measured); one
 * clock reading between two kernels serves as the end of one and the start of the next (a
 * fresh one follows a stack measurement), so the node times add up to the graph's time.
 */
#include <stdio.h>
#include <string.h>

#include "emit_c_internal.h"

int tether__c_profile_slots(const tether_ir_graph *g) {
    int n = 0;
    for (int i = 0; i < g->nnodes; i++) {
        n += tether__c_node_has_function(g, &g->nodes[i]) != 0;
    }
    return n;
}

void tether__c_profile_decls(em *e) {
    if (!e->o->profile) {
        return;
    }
    int n = tether__c_profile_slots(e->g);
    tether__sbuf_printf(&e->s,
                        "/* Profiling (tether compile --profile): the runtime's clock (ns on "
                        "tetherd, cycles on an MCU\n * board), read before and after each "
                        "kernel; per node 3 words: begin, end, stack bytes. */\n"
                        "extern uint64_t tether_platform_cycles(void);\n"
                        "static uint64_t %s_profile_table[%d];\n",
                        e->P, 3 * (n ? n : 1));
    if (e->o->profile == TETHER_PROFILE_STACK) {
        tether__sbuf_puts(&e->s, "/* the MCU firmware's: stack bytes used since the last call, "
                                 "the used part repainted */\nextern uint32_t "
                                 "tether_mcu_profile_stack(void);\n");
    }
    tether__sbuf_puts(&e->s, "\n");
}

void tether__c_profile_node(em *e, int slot, int after) {
    if (!e->o->profile) {
        return;
    }
    int stack = e->o->profile == TETHER_PROFILE_STACK;
    if (after) {
        line(e, "tgp_now = tether_platform_cycles();");
        line(e, "%s_profile_table[%d] = tgp_now;", e->P, 3 * slot + 1);
        if (stack) {
            line(e, "%s_profile_table[%d] = tether_mcu_profile_stack();", e->P, 3 * slot + 2);
        }
        return;
    }
    /* one reading between two kernels (the end of one is the start of the next), so the node
     * times add up to the graph's; after a stack measurement a fresh one */
    if (slot == 0) {
        line(e, "uint64_t tgp_now = tether_platform_cycles();");
    } else if (stack) {
        line(e, "tgp_now = tether_platform_cycles();");
    }
    line(e, "%s_profile_table[%d] = tgp_now;", e->P, 3 * slot);
}

void tether__c_profile_function(em *e) {
    if (!e->o->profile) {
        return;
    }
    const char *P = e->P;
    int n = tether__c_profile_slots(e->g);
    if (e->o->abi == TETHER_ABI_UNPACKED) {
        tether__sbuf_printf(&e->s,
                            "/* Copies the profile table of the last call (%d bytes) to out. */\n"
                            "int32_t %s_profile(uint8_t *out) {\n"
                            "    if (out == 0) {\n        return -1;\n    }\n"
                            "    memcpy(out, %s_profile_table, sizeof %s_profile_table);\n"
                            "    return 0;\n}\n\n",
                            24 * (n ? n : 1), P, P, P);
        return;
    }
    tether__sbuf_printf(
        &e->s,
        "static const int64_t %s_shape_profile_table[1] = {%d};\n"
        "/* Copies the profile table of the last call to a uint8[%d] array. */\n"
        "int32_t %s_profile(tether_value *args, int32_t *type_codes, int32_t "
        "num_args,\n        tether_value *ret, int32_t *ret_type_code, void "
        "*resource_handle) {\n"
        "    (void)ret;\n    (void)ret_type_code;\n    (void)resource_handle;\n"
        "    if (num_args != 1) {\n"
        "        return tg_fail(\"%s_profile\", num_args, \"expects 1 argument\");\n"
        "    }\n"
        "    if (tg_check(\"%s_profile\", args, type_codes, 0, 1, "
        "%s_shape_profile_table, 1, 8) != 0) {\n"
        "        return -6;\n    }\n"
        "    memcpy(tg_data(args, 0), %s_profile_table, sizeof %s_profile_table);\n"
        "    return 0;\n}\n\n",
        P, 24 * (n ? n : 1), 24 * (n ? n : 1), P, P, P, P, P, P);
}
