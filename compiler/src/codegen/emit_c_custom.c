/*
 * The C emitter's part for custom operators (docs/custom-ops.md): the contract's tensor
 * descriptor type, the prototype of every user function a module calls, a CUSTOM node's kernel
 * body (one descriptor per tensor, dense in the declared layout: the permutes around the node are
 * IR nodes of their own) and, at the end of the module, the user's C sources, each after a #line
 * directive so a build error names the user's file and line.
 *
 * What must stay true: the same kernel body serves both ABIs (the packed and unpacked functions
 * and the graph call it); the user's status reaches the caller (tg_custom_rc, returned by the
 * operator's function and checked by the graph after the call); a source shared by several
 * registry entries is written once.
 */
#include <stdio.h>
#include <string.h>

#include "../custom/custom_internal.h"
#include "emit_c_internal.h"
#include "tether/crt/error.h"

static int impl_of(const em *e, const tether_ir_node *nd, const tether_custom_impl **im) {
    const tether_custom_op *op = tether_custom_op_of(e->g, nd);
    if (!op) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "node '%s': custom operator without a registry entry", nd->name);
    }
    return tether__custom_c_impl(op, e->o->custom_mcu, im);
}

int tether__c_custom_prototypes(em *e) {
    int any = 0;
    for (int i = 0; i < e->g->nnodes; i++) {
        const tether_ir_node *nd = &e->g->nodes[i];
        if (nd->op != TETHER_OP_CUSTOM) {
            continue;
        }
        const tether_custom_impl *im;
        int rc = impl_of(e, nd, &im);
        if (rc) {
            return rc;
        }
        if (!any) {
            tether__sbuf_puts(&e->s, tether__custom_c_prelude);
            tether__sbuf_puts(&e->s, "/* status of the last custom operator call */\n"
                                     "static int32_t tg_custom_rc;\n");
            any = 1;
        }
        tether__sbuf_printf(&e->s,
                            "int32_t %s(const tether_custom_tensor *inputs, int32_t ninputs,\n"
                            "    const tether_custom_tensor *outputs, int32_t noutputs);\n",
                            im->entry);
    }
    if (any) {
        tether__sbuf_puts(&e->s, "\n");
    }
    return TETHER_OK;
}

static void descriptor(em *e, const char *arr, int j, const char *ptr, const tether_ir_tensor *t) {
    char sh[300];
    size_t o = 0;
    for (int d = 0; d < t->ndim && o < sizeof sh; d++) {
        o += (size_t)snprintf(sh + o, sizeof sh - o, "%s%lld", d ? ", " : "",
                              (long long)t->shape[d]);
    }
    line(e, "%s[%d].data = (void *)%s;", arr, j, ptr);
    line(e, "%s[%d].ndim = %d;", arr, j, t->ndim);
    for (int d = 0; d < t->ndim; d++) {
        line(e, "%s[%d].shape[%d] = %lld;", arr, j, d, (long long)t->shape[d]);
    }
    (void)sh;
}

void tether__c_custom_body(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_custom_impl *im;
    if (impl_of(e, nd, &im)) {
        line(e, "#error \"tether: custom operator without a C implementation\"");
        return;
    }
    const tether_custom_op *op = tether_custom_op_of(e->g, nd);
    line(e, "/* custom %s::%s: %s() from %s */", tether__cg_comment_text(op->domain),
         tether__cg_comment_text(op->name), im->entry, tether__cg_comment_text(im->file));
    line(e, "tether_custom_tensor ti[%d], to[1];", nd->ninputs);
    for (int j = 0; j < nd->ninputs; j++) {
        descriptor(e, "ti", j, k->in[j], T(e, nd->inputs[j]));
    }
    descriptor(e, "to", 0, k->out, T(e, nd->outputs[0]));
    line(e, "tg_custom_rc = %s(ti, %d, to, 1);", im->entry, nd->ninputs);
}

int tether__c_custom_sources(em *e) {
    const tether_custom_impl *done[TETHER_IR_MAX_INPUTS * 4];
    int ndone = 0;
    for (int i = 0; i < e->g->nnodes; i++) {
        const tether_ir_node *nd = &e->g->nodes[i];
        if (nd->op != TETHER_OP_CUSTOM) {
            continue;
        }
        const tether_custom_impl *im;
        int rc = impl_of(e, nd, &im);
        if (rc) {
            return rc;
        }
        int seen = 0;
        for (int j = 0; j < ndone && !seen; j++) {
            seen = done[j] == im ||
                   (!strcmp(done[j]->file, im->file) && !strcmp(done[j]->text, im->text));
        }
        if (seen) {
            continue;
        }
        if (ndone < (int)(sizeof done / sizeof *done)) {
            done[ndone++] = im;
        }
        tether__sbuf_printf(&e->s,
                            "\n/* ---- custom operator source %s (the registry's; docs/"
                            "custom-ops.md) ---- */\n#line 1 \"%s\"\n%s\n",
                            tether__cg_comment_text(im->file), im->file, im->text);
    }
    return TETHER_OK;
}
