/*
 * Element types of the IR: the classes elementwise code computes them in, their names, and the
 * typing rules of the operator table (the TYPES column of ops.def) that tether_ir_infer checks
 * and uses to set every node output's element type.
 *
 * What must stay true: a node passes tether__ir_infer_dtype only when every kernel of its
 * operator (interpreter, C, OpenCL or a compile-time refusal of the backend) runs its input
 * types; the message names the node, the tensor, its type and what the operator takes.
 */
#include <string.h>

#include "../internal.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"
#include "tether/ir.h"

tether__dclass tether__dtype_class(DLDataType t) {
    if (t.lanes != 1) {
        return TETHER__DC_NONE;
    }
    switch (t.code) {
    case kDLFloat:
        return t.bits == 16 || t.bits == 32 ? TETHER__DC_F32
               : t.bits == 64               ? TETHER__DC_F64
                                            : TETHER__DC_NONE;
    case kDLBfloat:
        return t.bits == 16 ? TETHER__DC_F32 : TETHER__DC_NONE;
    case kDLInt:
        return t.bits == 8 || t.bits == 16 || t.bits == 32 || t.bits == 64 ? TETHER__DC_INT
                                                                           : TETHER__DC_NONE;
    case kDLUInt: /* bits 1: bool, one byte 0/1 */
        return t.bits == 1 || t.bits == 8 || t.bits == 16 || t.bits == 32 || t.bits == 64
                   ? TETHER__DC_UINT
                   : TETHER__DC_NONE;
    default:
        return TETHER__DC_NONE;
    }
}

bool tether__dtype_is_float(DLDataType t) {
    tether__dclass c = tether__dtype_class(t);
    return c == TETHER__DC_F32 || c == TETHER__DC_F64;
}

bool tether__dtype_is_bool(DLDataType t) {
    return t.code == kDLUInt && t.bits == 1 && t.lanes == 1;
}

const char *tether__dtype_str(DLDataType t) {
    static const struct {
        uint8_t code, bits;
        const char *name;
    } names[] = {
        {kDLUInt, 1, "bool"},      {kDLInt, 8, "int8"},         {kDLInt, 16, "int16"},
        {kDLInt, 32, "int32"},     {kDLInt, 64, "int64"},       {kDLUInt, 8, "uint8"},
        {kDLUInt, 16, "uint16"},   {kDLUInt, 32, "uint32"},     {kDLUInt, 64, "uint64"},
        {kDLFloat, 16, "float16"}, {kDLBfloat, 16, "bfloat16"}, {kDLFloat, 32, "float32"},
        {kDLFloat, 64, "float64"},
    };
    for (size_t i = 0; t.lanes == 1 && i < sizeof names / sizeof *names; i++) {
        if (names[i].code == t.code && names[i].bits == t.bits) {
            return names[i].name;
        }
    }
    return "?";
}

const char *tether__c_type(DLDataType t) {
    switch (tether__dtype_class(t)) {
    case TETHER__DC_F32:
        return t.bits == 32 ? "float" : "uint16_t";
    case TETHER__DC_F64:
        return "double";
    case TETHER__DC_INT:
        return t.bits == 8    ? "int8_t"
               : t.bits == 16 ? "int16_t"
               : t.bits == 32 ? "int32_t"
                              : "int64_t";
    case TETHER__DC_UINT:
        return t.bits <= 8    ? "uint8_t"
               : t.bits == 16 ? "uint16_t"
               : t.bits == 32 ? "uint32_t"
                              : "uint64_t";
    case TETHER__DC_NONE:
        break;
    }
    return NULL;
}

static int bad_type(const tether_ir_node *n, const tether_ir_tensor *t, const char *takes) {
    return tether__ir_node_error(n, TETHER_ERR_UNSUPPORTED, "input '%s' has element type %s; %s",
                                 t->name, tether__dtype_str(t->dtype), takes);
}

/* Inputs from..to-1 (present ones, residual excluded) must have t's element type. */
static int alike(const tether_ir_graph *g, const tether_ir_node *n, int from, int to,
                 DLDataType t) {
    for (int i = from; i < to; i++) {
        const tether_ir_tensor *x = tether__ir_in(g, n, i);
        if (x && !tether_dtype_equal(x->dtype, t)) {
            return tether__ir_node_error(n, TETHER_ERR_MISMATCH,
                                         "input '%s' has element type %s, unlike the %s of '%s'",
                                         x->name, tether__dtype_str(x->dtype), tether__dtype_str(t),
                                         g->tensors[n->inputs[from - 1]].name);
        }
    }
    return TETHER_OK;
}

int tether__ir_infer_dtype(const tether_ir_graph *g, const tether_ir_node *n, DLDataType *out) {
    const tether__op_info *info = tether__op_info_of(n->op);
    int nin = tether__ir_main_inputs(n);
    const tether_ir_tensor *x = tether__ir_in(g, n, 0);
    if (info && info->kind == TETHER__OPK_REDUCE) {
        nin = 1; /* input 1: the int64 live extent of dimension 0 (shapes_dynamic_use.c) */
    }
    if (!info || !x) {
        return tether__ir_node_error(n, TETHER_ERR_INTERNAL, "no typing rule");
    }
    for (int i = 0; i < n->ninputs; i++) {
        const tether_ir_tensor *t = tether__ir_in(g, n, i);
        if (t && tether__dtype_class(t->dtype) == TETHER__DC_NONE) {
            char dn[TETHER_DTYPE_NAME_MAX] = "?";
            tether_dtype_name(t->dtype, dn, sizeof dn);
            return tether__ir_node_error(n, TETHER_ERR_UNSUPPORTED,
                                         "input '%s' has element type %s, which tether does not "
                                         "compute",
                                         t->name, dn);
        }
    }
    DLDataType xt = x->dtype;
    tether__dclass xc = tether__dtype_class(xt);
    int rc;
    *out = xt;
    switch (info->types) {
    case TETHER__TY_F32:
        for (int i = 0; i < n->ninputs; i++) {
            const tether_ir_tensor *t = tether__ir_in(g, n, i);
            if (t && !tether_dtype_equal(t->dtype, TETHER_FLOAT32)) {
                return bad_type(n, t, "this operator takes float32 only");
            }
        }
        return TETHER_OK;
    case TETHER__TY_FLOAT:
        if (!tether__dtype_is_float(xt)) {
            return bad_type(n, x, "this operator takes floating-point types only");
        }
        return alike(g, n, 1, nin, xt);
    case TETHER__TY_NUM:
        if (tether__dtype_is_bool(xt)) {
            return bad_type(n, x, "this operator takes numeric types only");
        }
        return alike(g, n, 1, nin, xt);
    case TETHER__TY_ANY:
        return alike(g, n, 1, nin, xt);
    case TETHER__TY_CMP:
    case TETHER__TY_CMPEQ:
        if (info->types == TETHER__TY_CMP && tether__dtype_is_bool(xt)) {
            return bad_type(n, x, "this operator takes numeric types only");
        }
        *out = TETHER_BOOL;
        return alike(g, n, 1, nin, xt);
    case TETHER__TY_LOGIC:
        if (!tether__dtype_is_bool(xt)) {
            return bad_type(n, x, "this operator takes bool only");
        }
        return alike(g, n, 1, nin, xt);
    case TETHER__TY_BITS:
        if (xt.code != kDLUInt) {
            return bad_type(n, x, "this operator takes unsigned integer types only");
        }
        return alike(g, n, 1, nin, xt);
    case TETHER__TY_ISFLT:
        if (!tether__dtype_is_float(xt)) {
            return bad_type(n, x, "this operator takes floating-point types only");
        }
        *out = TETHER_BOOL;
        return TETHER_OK;
    case TETHER__TY_CAST:
        if (tether__dtype_class(n->attrs.to) == TETHER__DC_NONE) {
            char dn[TETHER_DTYPE_NAME_MAX] = "?";
            tether_dtype_name(n->attrs.to, dn, sizeof dn);
            return tether__ir_node_error(n, TETHER_ERR_UNSUPPORTED,
                                         "casts to element type %s, which tether does not compute",
                                         dn);
        }
        *out = n->attrs.to;
        (void)xc;
        return TETHER_OK;
    case TETHER__TY_WHERE:
        if (!tether__dtype_is_bool(xt)) {
            return bad_type(n, x, "the condition must be bool");
        }
        if ((rc = alike(g, n, 2, 3, g->tensors[n->inputs[1]].dtype))) {
            return rc;
        }
        *out = g->tensors[n->inputs[1]].dtype;
        return TETHER_OK;
    case TETHER__TY_DATA:
        return tether__ir_data_dtype(g, n, out);
    case TETHER__TY_LOSS: {
        const tether_ir_tensor *t = tether__ir_in(g, n, 1), *w = tether__ir_in(g, n, 2);
        if (!tether_dtype_equal(xt, TETHER_FLOAT32)) {
            return bad_type(n, x, "the scores must be float32");
        }
        if (tether__dtype_class(t->dtype) != TETHER__DC_INT &&
            (tether__dtype_class(t->dtype) != TETHER__DC_UINT || tether__dtype_is_bool(t->dtype))) {
            return bad_type(n, t, "the target must be an integer type");
        }
        if (w && !tether_dtype_equal(w->dtype, TETHER_FLOAT32)) {
            return bad_type(n, w, "the weight must be float32");
        }
        return TETHER_OK;
    }
    case TETHER__TY_QUANT:
        return tether__ir_quant_dtype(g, n, out);
    case TETHER__TY_CUSTOM:
        /* the registry declares every type; the resource contract (custom/contract.c, run by the
         * shape rule) checked the inputs against it, and the front end gave the output its type */
        *out = g->tensors[n->outputs[0]].dtype;
        return TETHER_OK;
    }
    return tether__ir_node_error(n, TETHER_ERR_INTERNAL, "no typing rule");
}
