/*
 * Graph passes: constant folding, batch-norm folding, epilogue fusion, dead-node elimination.
 *
 * What must stay true: a pass never changes what the graph computes (tests compare the
 * interpreter before and after), never rewrites a tensor that is a graph output into something
 * else, and leaves the graph inferable. Passes mark nodes dead (op = TETHER_OP_COUNT_) and
 * tether_passes_run compacts and re-infers after each one.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "tether/compiler.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

#define DEAD TETHER_OP_COUNT_

void tether_pass_options_init(tether_pass_options *o) {
    o->fold_constants = true;
    o->fold_batch_norm = true;
    o->fuse_epilogues = true;
    o->eliminate_dead = true;
    o->pad_conv_min_width = 0;
    o->integer_ops = true;
}

int tether__ir_consumers(const tether_ir_graph *g, int t, int *nodes, int max) {
    int count = 0;
    for (int i = 0; i < g->nnodes; i++) {
        const tether_ir_node *n = &g->nodes[i];
        if (n->op == DEAD) {
            continue;
        }
        for (int j = 0; j < n->ninputs; j++) {
            if (n->inputs[j] == t) {
                if (count < max) {
                    nodes[count] = i;
                }
                count++;
                break;
            }
        }
    }
    return count;
}

int tether__ir_is_graph_output(const tether_ir_graph *g, int t) {
    for (int i = 0; i < g->noutputs; i++) {
        if (g->outputs[i] == t) {
            return 1;
        }
    }
    return 0;
}

static int is_const(const tether_ir_graph *g, int t) {
    return t >= 0 && g->tensors[t].kind == TETHER_TENSOR_CONSTANT;
}

int tether_pass_fold_constants(tether_ir_graph *g) {
    for (int i = 0; i < g->nnodes; i++) {
        tether_ir_node *n = &g->nodes[i];
        if (n->op == DEAD || tether__ir_is_graph_output(g, n->outputs[0]) ||
            tether__ir_is_loop_op(n->op)) { /* a loop's operators run per iteration */
            continue;
        }
        int all = 1;
        for (int j = 0; j < n->ninputs && all; j++) {
            all = n->inputs[j] < 0 || is_const(g, n->inputs[j]);
        }
        if (!all) {
            continue;
        }
        tether_ir_tensor *o = &g->tensors[n->outputs[0]];
        size_t bytes = tether_ir_tensor_bytes(o);
        float *data = malloc(bytes ? bytes : 1);
        if (!data) {
            return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "constant folding: out of memory");
        }
        int rc = tether__interp_eval_node(g, i, data);
        if (rc) {
            free(data);
            return rc;
        }
        o->data = data;
        o->nbytes = bytes;
        o->kind = TETHER_TENSOR_CONSTANT;
        o->alias_of = -1;
        n->op = DEAD;
    }
    return TETHER_OK;
}

/* Adds a new constant named base+suffix (made unique) and returns its index. */
static int new_const(tether_ir_graph *g, const char *base, const char *suffix, int ndim,
                     const int64_t *shape, const float *data, size_t count, int *idx) {
    char name[256];
    snprintf(name, sizeof name, "%s%s", base, suffix);
    for (int k = 2; tether_ir_find_tensor(g, name) >= 0; k++) {
        snprintf(name, sizeof name, "%s%s%d", base, suffix, k);
    }
    return tether_ir_add_constant(g, name, TETHER_FLOAT32, ndim, shape, data, count * sizeof(float),
                                  idx);
}

int tether_pass_fold_batch_norm(tether_ir_graph *g) {
    for (int i = 0; i < g->nnodes; i++) {
        tether_ir_node *bn = &g->nodes[i];
        if (bn->op != TETHER_OP_BATCH_NORM) {
            continue;
        }
        int src = bn->inputs[0];
        int p = g->tensors[src].producer;
        if (p < 0 || tether__ir_is_graph_output(g, src) ||
            tether__ir_consumers(g, src, NULL, 0) != 1) {
            continue;
        }
        tether_ir_node *pr = &g->nodes[p];
        int ok = 1;
        for (int j = 1; j < 5; j++) {
            ok &= is_const(g, bn->inputs[j]);
        }
        if (!ok || pr->attrs.act != TETHER_ACT_NONE || pr->attrs.has_residual) {
            continue;
        }
        int is_conv = pr->op == TETHER_OP_CONV2D;
        int is_dense = pr->op == TETHER_OP_DENSE && !pr->attrs.trans_a;
        if (!is_conv && !is_dense) {
            continue;
        }
        int w = pr->inputs[1];
        int b = pr->ninputs > 2 ? pr->inputs[2] : -1;
        if (!is_const(g, w) || (b >= 0 && !is_const(g, b))) {
            continue;
        }
        if (is_dense && b >= 0 && g->tensors[b].ndim != 1) {
            continue;
        }
        const tether_ir_tensor *wt = &g->tensors[w];
        int64_t C = g->tensors[src].shape[1];
        const float *sc = g->tensors[bn->inputs[1]].data, *bi = g->tensors[bn->inputs[2]].data;
        const float *mu = g->tensors[bn->inputs[3]].data, *var = g->tensors[bn->inputs[4]].data;
        size_t wn = tether_ir_tensor_elements(wt);
        float *nw = malloc(wn * sizeof(float));
        float *nb = malloc((size_t)C * sizeof(float));
        if (!nw || !nb) {
            free(nw);
            free(nb);
            return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "batch-norm folding: out of memory");
        }
        const float *ow = wt->data;
        const float *ob = b >= 0 ? g->tensors[b].data : NULL;
        float bscale = is_dense ? pr->attrs.beta : 1.0f;
        for (int64_t c = 0; c < C; c++) {
            double s = sc[c] / sqrt((double)var[c] + bn->attrs.epsilon);
            nb[c] = (float)(((ob ? bscale * ob[c] : 0.0) - mu[c]) * s + bi[c]);
        }
        for (size_t k = 0; k < wn; k++) {
            int64_t c;
            if (is_conv) {
                c = (int64_t)k / (wn / (size_t)C);
            } else if (pr->attrs.trans_b) {
                c = (int64_t)k / wt->shape[1];
            } else {
                c = (int64_t)k % wt->shape[1];
            }
            double s = sc[c] / sqrt((double)var[c] + bn->attrs.epsilon);
            nw[k] = (float)(ow[k] * s);
        }
        int64_t bshape[1] = {C};
        int64_t wshape[TETHER_IR_MAX_NDIM];
        memcpy(wshape, wt->shape, sizeof wshape);
        int wnd = wt->ndim;
        char base[200];
        snprintf(base, sizeof base, "%s", pr->name);
        int niw, nib;
        int rc = new_const(g, base, ".w_bn", wnd, wshape, nw, wn, &niw);
        if (!rc) {
            rc = new_const(g, base, ".b_bn", 1, bshape, nb, (size_t)C, &nib);
        }
        free(nw);
        free(nb);
        if (rc) {
            return rc;
        }
        /* g->nodes did not move (only tensors grew); re-take pointers anyway. */
        pr = &g->nodes[p];
        bn = &g->nodes[i];
        pr->inputs[1] = niw;
        pr->inputs[2] = nib;
        if (pr->ninputs < 3) {
            pr->ninputs = 3;
        }
        if (is_dense) {
            pr->attrs.beta = 1.0f;
        }
        pr->outputs[0] = bn->outputs[0];
        bn->op = DEAD;
    }
    return TETHER_OK;
}

/* The fusion map: the activation node n folds into (the ACT column of the operator table), with
 * its parameters. */
static int act_of(const tether_ir_node *n, tether_ir_attrs *a) {
    const tether__op_info *info = tether__op_info_of(n->op);
    if (!info || info->fused_act == TETHER_ACT_NONE) {
        return 0;
    }
    a->act = info->fused_act;
    switch (info->fused_act) {
    case TETHER_ACT_CLIP:
        a->act_min = n->attrs.min;
        a->act_max = n->attrs.max;
        break;
    case TETHER_ACT_LEAKY_RELU:
        a->act_alpha = n->attrs.alpha;
        break;
    case TETHER_ACT_NONE:
    case TETHER_ACT_RELU:
    case TETHER_ACT_SIGMOID:
    case TETHER_ACT_TANH:
    case TETHER_ACT_HARD_SWISH:
        break; /* no parameter */
    }
    return 1;
}

/* A constant usable as a per-channel bias of producer pr: its values in channel order. */
static int bias_values(const tether_ir_graph *g, const tether_ir_node *pr, int t, int64_t C) {
    const tether_ir_tensor *ct = &g->tensors[t];
    if (!is_const(g, t) || (int64_t)tether_ir_tensor_elements(ct) != C) {
        return 0;
    }
    if (pr->op == TETHER_OP_CONV2D) {
        /* [C], [C,1,1] or [1,C,1,1] */
        if (ct->ndim == 1) {
            return 0; /* would broadcast along W, not channels */
        }
        if (ct->ndim == 3) {
            return ct->shape[0] == C;
        }
        return ct->ndim == 4 && ct->shape[1] == C;
    }
    /* dense: [N] or [1,N] */
    return (ct->ndim == 1 || (ct->ndim == 2 && ct->shape[0] == 1)) && ct->shape[ct->ndim - 1] == C;
}

int tether_pass_fuse_epilogues(tether_ir_graph *g) {
    int changed = 1;
    while (changed) {
        changed = 0;
        for (int i = 0; i < g->nnodes; i++) {
            tether_ir_node *pr = &g->nodes[i];
            if (pr->op != TETHER_OP_CONV2D && pr->op != TETHER_OP_DENSE &&
                pr->op != TETHER_OP_MATMUL) {
                continue;
            }
            if (pr->attrs.act != TETHER_ACT_NONE) {
                continue;
            }
            int out = pr->outputs[0];
            int cons;
            if (tether__ir_is_graph_output(g, out) || tether__ir_consumers(g, out, &cons, 1) != 1) {
                continue;
            }
            tether_ir_node *cn = &g->nodes[cons];
            const tether_ir_tensor *ot = &g->tensors[out];
            const tether_ir_tensor *ct = &g->tensors[cn->outputs[0]];
            if (act_of(cn, &pr->attrs)) {
                /* activation epilogue */
            } else if (cn->op == TETHER_OP_ADD && !pr->attrs.has_residual) {
                int other = cn->inputs[0] == out ? cn->inputs[1] : cn->inputs[0];
                if (other == out || ct->ndim != ot->ndim ||
                    memcmp(ct->shape, ot->shape, sizeof(int64_t) * (size_t)ot->ndim)) {
                    continue;
                }
                int64_t C = ot->shape[1];
                int has_bias = pr->ninputs > 2 && pr->inputs[2] >= 0;
                const tether_ir_tensor *o2 = &g->tensors[other];
                int bias_ok = pr->op != TETHER_OP_MATMUL && bias_values(g, pr, other, C);
                if (bias_ok && has_bias) {
                    const tether_ir_tensor *ob = &g->tensors[pr->inputs[2]];
                    /* an existing bias must be a constant [C] (conv) or [N] (dense, beta 1) */
                    bias_ok = ob->kind == TETHER_TENSOR_CONSTANT && ob->ndim == 1 &&
                              ob->shape[0] == C &&
                              (pr->op == TETHER_OP_CONV2D || pr->attrs.beta == 1.0f);
                }
                if (bias_ok) {
                    int64_t bshape[1] = {C};
                    int nb;
                    char base[200];
                    snprintf(base, sizeof base, "%s", pr->name);
                    float *sum = malloc(sizeof(float) * (size_t)C);
                    if (!sum) {
                        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "fusion: out of memory");
                    }
                    for (int64_t c = 0; c < C; c++) {
                        sum[c] =
                            ((const float *)o2->data)[c] +
                            (has_bias ? ((const float *)g->tensors[pr->inputs[2]].data)[c] : 0.0f);
                    }
                    int rc = new_const(g, base, ".bias", 1, bshape, sum, (size_t)C, &nb);
                    free(sum);
                    if (rc) {
                        return rc;
                    }
                    pr = &g->nodes[i];
                    cn = &g->nodes[cons];
                    pr->inputs[2] = nb;
                    if (pr->ninputs < 3) {
                        pr->ninputs = 3;
                    }
                    if (pr->op == TETHER_OP_DENSE) {
                        pr->attrs.beta = 1.0f;
                    }
                } else if (o2->kind != TETHER_TENSOR_CONSTANT && o2->ndim == ot->ndim &&
                           !memcmp(o2->shape, ot->shape, sizeof(int64_t) * (size_t)ot->ndim) &&
                           pr->ninputs < TETHER_IR_MAX_INPUTS) {
                    if (pr->op != TETHER_OP_MATMUL && pr->ninputs == 2) {
                        pr->inputs[pr->ninputs++] = -1; /* keep the bias slot */
                    }
                    pr->inputs[pr->ninputs++] = other;
                    pr->attrs.has_residual = true;
                } else {
                    continue;
                }
            } else {
                continue;
            }
            pr->outputs[0] = cn->outputs[0];
            cn->op = DEAD;
            changed = 1;
            /* A dead consumer no longer counts; the loop restarts to keep indices simple. */
            int rc = tether_ir_compact(g);
            if (rc) {
                return rc;
            }
            break;
        }
    }
    return TETHER_OK;
}

int tether_pass_eliminate_dead(tether_ir_graph *g) {
    char *need = calloc((size_t)(g->ntensors ? g->ntensors : 1), 1);
    if (!need) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "dead-node elimination: out of memory");
    }
    for (int i = 0; i < g->noutputs; i++) {
        need[g->outputs[i]] = 1;
    }
    for (int i = g->nnodes - 1; i >= 0; i--) {
        tether_ir_node *n = &g->nodes[i];
        if (n->op == DEAD || !need[n->outputs[0]]) {
            n->op = DEAD;
            continue;
        }
        for (int j = 0; j < n->ninputs; j++) {
            if (n->inputs[j] >= 0) {
                need[n->inputs[j]] = 1;
            }
        }
    }
    free(need);
    return TETHER_OK;
}

int tether_pass_pad_convs(tether_ir_graph *g, int min_width) {
    int n0 = g->nnodes;
    for (int i = 0; i < n0; i++) {
        tether_ir_node *n = &g->nodes[i];
        if (n->op != TETHER_OP_CONV2D) {
            continue;
        }
        const int64_t *p = n->attrs.pads;
        const tether_ir_tensor *y = &g->tensors[n->outputs[0]];
        if ((p[0] | p[1] | p[2] | p[3]) == 0 || y->ndim != 4 ||
            y->shape[2] * y->shape[3] < min_width) {
            continue;
        }
        int x = n->inputs[0], padded;
        char name[300];
        snprintf(name, sizeof name, "%.200s.padded", n->name);
        if (tether_ir_find_tensor(g, name) >= 0) {
            return tether_set_error(TETHER_ERR_INTERNAL, "pad_convs: tensor %s exists", name);
        }
        int rc = tether_ir_add_tensor(g, name, g->tensors[x].dtype, TETHER_IR_SHAPE_UNKNOWN, NULL,
                                      &padded);
        if (rc) {
            return rc;
        }
        tether_ir_attrs a;
        tether_ir_attrs_init(TETHER_OP_PAD, &a);
        a.nints = 8; /* [begin N C H W, end N C H W] */
        memset(a.ints, 0, sizeof a.ints);
        a.ints[2] = p[0];
        a.ints[3] = p[1];
        a.ints[6] = p[2];
        a.ints[7] = p[3];
        a.value = 0.0f;
        snprintf(name, sizeof name, "%.200s.pad", g->nodes[i].name);
        rc = tether_ir_add_node(g, name, TETHER_OP_PAD, &x, 1, &padded, 1, &a, NULL);
        if (rc) {
            return rc;
        }
        n = &g->nodes[i]; /* add_node may have moved the array */
        n->inputs[0] = padded;
        memset(n->attrs.pads, 0, sizeof n->attrs.pads);
    }
    return TETHER_OK;
}

static int settle(tether_ir_graph *g, const char *pass) {
    int rc = tether_ir_compact(g);
    if (!rc) {
        rc = tether_ir_infer(g);
    }
    if (rc) {
        char msg[TETHER_ERROR_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", tether_last_error());
        return tether_set_error(TETHER_ERR_INTERNAL, "after %s: %s", pass, msg);
    }
    return TETHER_OK;
}

int tether_passes_run(tether_ir_graph *g, const tether_pass_options *o) {
    tether_pass_options d;
    if (!o) {
        tether_pass_options_init(&d);
        o = &d;
    }
    int rc;
    /* Dead nodes first too, so folding never evaluates work nobody needs. */
    if (o->eliminate_dead && ((rc = tether_pass_eliminate_dead(g)) || (rc = settle(g, "dce")))) {
        return rc;
    }
    if (o->integer_ops && ((rc = tether_pass_integer_ops(g)) || (rc = settle(g, "integer ops")) ||
                           (rc = tether_pass_eliminate_dead(g)) || (rc = settle(g, "dce")))) {
        return rc;
    }
    if (o->fold_constants &&
        ((rc = tether_pass_fold_constants(g)) || (rc = settle(g, "constant folding")))) {
        return rc;
    }
    if (o->fold_batch_norm &&
        ((rc = tether_pass_fold_batch_norm(g)) || (rc = settle(g, "batch-norm folding")))) {
        return rc;
    }
    if (o->fuse_epilogues &&
        ((rc = tether_pass_fuse_epilogues(g)) || (rc = settle(g, "epilogue fusion")))) {
        return rc;
    }
    if (o->eliminate_dead && ((rc = tether_pass_eliminate_dead(g)) || (rc = settle(g, "dce")))) {
        return rc;
    }
    if (o->pad_conv_min_width > 0 && ((rc = tether_pass_pad_convs(g, o->pad_conv_min_width)) ||
                                      (rc = settle(g, "conv padding")))) {
        return rc;
    }
    return TETHER_OK;
}
