/*
 * _tether's functions of the compiler (_tether.h): compile (for a session's device through the
 * host library, tether_compile_for_device, or for a named target), a model's signature, the
 * reference interpreter and the target list. They run under one process-wide lock with the GIL
 * released (the compiler's caches are shared); compiling for a session takes that lock, then the
 * session's. Built with TETHER_HAVE_COMPILER only.
 */
#include "_tether.h"

#ifdef TETHER_HAVE_COMPILER
static PyThread_type_lock g_compiler_lock;

int tether__py_compiler_init(void) {
    if (!g_compiler_lock && !(g_compiler_lock = PyThread_allocate_lock())) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* Model load options from Python: input shape specs and (dtype, shape, buffer) values. The
 * buffers stay held until load_opts_release. */
typedef struct load_opts {
    tether_model_load_options lo;
    tether_model_input_shape shapes[TPY_MAX_VALUES];
    tether_model_value values[TPY_MAX_VALUES];
    Py_buffer bufs[TPY_MAX_VALUES];
    unsigned char bound[TPY_MAX_VALUES];
    int nbufs;
    const char *names[TPY_MAX_VALUES]; /* the values' input names, when given */
    PyObject *names_tuple;             /* holds the name strings during the call */
} load_opts;

static void load_opts_release(load_opts *o) {
    for (int i = 0; i < o->nbufs; i++) {
        if (o->bufs[i].obj) {
            PyBuffer_Release(&o->bufs[i]);
        }
    }
    o->nbufs = 0;
    Py_CLEAR(o->names_tuple);
}

/* loop_max (docs/python.md): the scan-output rows of a run-time Loop whose trip count has no
 * bound of its own; 0 = none. */
static int loop_max_set(load_opts *o, long long loop_max) {
    if (loop_max < 0) {
        PyErr_Format(PyExc_ValueError, "loop_max must be >= 0 (0: none), not %lld", loop_max);
        return -1;
    }
    o->lo.loop_max = loop_max;
    return 0;
}

/* shapes: None or ["NAME=1x3"]; values: None or [(dtype, shape, buffer) or None] in the model's
 * input order, or in the order of names (None or [str], one per value) when given. */
static int load_opts_parse(load_opts *o, PyObject *shapes, PyObject *values, PyObject *names) {
    memset(o, 0, sizeof *o);
    if (shapes && shapes != Py_None) {
        PyObject *fast = PySequence_Fast(shapes, "input_shapes must be a sequence of str");
        if (!fast) {
            return -1;
        }
        Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
        if (n > TPY_MAX_VALUES) {
            Py_DECREF(fast);
            PyErr_Format(PyExc_ValueError, "more than %d input shapes", TPY_MAX_VALUES);
            return -1;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            const char *spec = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(fast, i));
            if (!spec) {
                Py_DECREF(fast);
                return -1;
            }
            if (tether_model_input_shape_parse(spec, &o->shapes[i])) {
                Py_DECREF(fast);
                PyErr_Format(PyExc_ValueError, "input shape: %s", tether_last_error());
                return -1;
            }
        }
        o->lo.input_shapes = o->shapes;
        o->lo.ninput_shapes = (int)n;
        Py_DECREF(fast);
    }
    if (values && values != Py_None) {
        PyObject *fast = PySequence_Fast(values, "input_values must be a sequence");
        if (!fast) {
            return -1;
        }
        Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
        if (n > TPY_MAX_VALUES) {
            Py_DECREF(fast);
            PyErr_Format(PyExc_ValueError, "more than %d input values", TPY_MAX_VALUES);
            return -1;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *item = PySequence_Fast_GET_ITEM(fast, i);
            tether_model_value *v = &o->values[i];
            if (item == Py_None) {
                continue;
            }
            const char *dt;
            PyObject *shape;
            if (!PyArg_ParseTuple(item, "sOy*;an input value is (dtype, shape, buffer)", &dt,
                                  &shape, &o->bufs[o->nbufs])) {
                Py_DECREF(fast);
                load_opts_release(o);
                return -1;
            }
            Py_buffer *b = &o->bufs[o->nbufs++];
            if (tether__py_parse_dtype(dt, &v->dtype) ||
                tether__py_parse_shape(shape, v->shape, &v->ndim)) {
                Py_DECREF(fast);
                load_opts_release(o);
                return -1;
            }
            v->data = b->buf;
            v->nbytes = (size_t)b->len;
        }
        o->lo.input_values = o->values;
        o->lo.ninput_values = (int)n;
        o->lo.input_bound = o->bound;
        Py_DECREF(fast);
    }
    if (names && names != Py_None) {
        o->names_tuple = PySequence_Tuple(names);
        if (!o->names_tuple) {
            load_opts_release(o);
            return -1;
        }
        Py_ssize_t n = PyTuple_GET_SIZE(o->names_tuple);
        if (n != o->lo.ninput_values) {
            load_opts_release(o);
            PyErr_Format(PyExc_ValueError, "%zd input names for %d input values", n,
                         o->lo.ninput_values);
            return -1;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            o->names[i] = PyUnicode_AsUTF8(PyTuple_GET_ITEM(o->names_tuple, i));
            if (!o->names[i]) {
                load_opts_release(o);
                return -1;
            }
        }
        o->lo.input_names = o->names;
    }
    return 0;
}

static PyObject *bound_list(const load_opts *o) {
    PyObject *l = PyList_New(o->lo.ninput_values);
    for (int i = 0; l && i < o->lo.ninput_values; i++) {
        PyList_SET_ITEM(l, i, PyBool_FromLong(o->bound[i]));
    }
    return l;
}

static PyThreadState *compiler_lock(void) {
    PyThreadState *ts = PyEval_SaveThread();
    PyThread_acquire_lock(g_compiler_lock, WAIT_LOCK);
    return ts;
}

static void compiler_unlock(PyThreadState *ts) {
    PyThread_release_lock(g_compiler_lock);
    PyEval_RestoreThread(ts);
}

/* Takes the compiler's full error text (tether_error_detail) on the calling thread. */
static void err_take_detail(tpy_err *e, int rc) {
    tether__py_err_take(e, rc);
    if (rc) {
        const char *d = tether_error_detail();
        e->detail = strdup(d && *d ? d : e->msg);
    }
}

PyObject *tether__py_compile(PyObject *self, PyObject *args, PyObject *kw) {
    (void)self;
    static char *kwlist[] = {"model",         "out_dir",         "abi",          "target",
                             "cpu",           "prefix",          "opt_level",    "link_params",
                             "backend",       "texture_weights", "input_shapes", "input_values",
                             "tuning_log",    "input_names",     "session",      "firmware",
                             "firmware_dirs", "profile",         "loop_max",     NULL};
    const char *model, *out_dir, *abi = NULL, *target = NULL, *cpu = NULL, *prefix = NULL;
    const char *backend = NULL, *tuning_log = NULL, *firmware = NULL;
    int opt_level = TETHER_OPT_DEFAULT, link_params = 1, texture_weights = 0, profile = 0;
    PyObject *shapes = Py_None, *values = Py_None, *names = Py_None, *sobj = Py_None;
    PyObject *dirs = Py_None;
    long long loop_max = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "ss|zzzzipzpOOzOOzOpL", kwlist, &model, &out_dir,
                                     &abi, &target, &cpu, &prefix, &opt_level, &link_params,
                                     &backend, &texture_weights, &shapes, &values, &tuning_log,
                                     &names, &sobj, &firmware, &dirs, &profile, &loop_max)) {
        return NULL;
    }
    if (sobj != Py_None && !PyObject_TypeCheck(sobj, &tether__py_session_type)) {
        return PyErr_Format(PyExc_TypeError, "session must be a _tether.Session");
    }
    tpy_session *sess = sobj != Py_None ? (tpy_session *)sobj : NULL;
    tether_compile_options o;
    tether_compile_options_init(&o);
    if (abi && tether_abi_parse(abi, &o.codegen.abi)) {
        return PyErr_Format(PyExc_ValueError, "unknown ABI '%s' (packed or unpacked)", abi);
    }
    if (backend && tether_backend_parse(backend, &o.backend)) {
        return PyErr_Format(PyExc_ValueError, "unknown backend '%s' (c or opencl)", backend);
    }
    if (opt_level != TETHER_OPT_DEFAULT && (opt_level < -1 || opt_level > 3)) {
        return PyErr_Format(PyExc_ValueError, "opt_level must be 0..3 or 's'");
    }
    if (target) {
        const tether_target *t;
        if (tether_target_find(target, &t)) {
            return PyErr_Format(PyExc_ValueError, "target: %s", tether_last_error());
        }
        o.build.target = t->name;
    }
    o.build.cpu = cpu;
    o.build.opt_level = opt_level;
    if (prefix) {
        o.codegen.prefix = prefix;
        o.opencl.prefix = prefix;
    }
    o.codegen.link_params = link_params != 0;
    o.opencl.texture_weights = texture_weights != 0;
    o.profile = profile != 0; /* a profiling build (docs/profile.md) */
    load_opts lo;
    if (load_opts_parse(&lo, shapes, values, names)) {
        return NULL;
    }
    if (loop_max_set(&lo, loop_max)) {
        load_opts_release(&lo);
        return NULL;
    }
    tether_compile_result res;
    memset(&res, 0, sizeof res);
    tpy_err e = {0};
    /* for a session's device: the host library's one call (target, CPU from its HELLO) */
    static tether_device_compile_options dco; /* under the compiler lock */
    const char *dirv[8];
    PyObject *fast = NULL;
    if (sess && tether__py_firmware_opts(&dco, firmware, dirs, dirv, &fast)) {
        load_opts_release(&lo);
        return NULL;
    }
    PyThreadState *ts = compiler_lock();
    o.load = &lo.lo;
    tether_tuning_log tlog;
    tether_node_schedule *tns = NULL;
    int rc = 0;
    if (sess) {
        dco.compile = o;
        if (!target) { /* the device's target and CPU (tether_device_compile_resolve) */
            dco.compile.build.target = NULL;
        }
        dco.tuning_log = tuning_log;
        PyThread_acquire_lock(sess->lock, WAIT_LOCK);
        if (!sess->s) {
            e.closed = 1;
        } else {
            err_take_detail(&e,
                            tether_compile_for_device(sess->s, model, out_dir, &dco, &res, NULL));
        }
        PyThread_release_lock(sess->lock);
        o = dco.compile; /* the target and CPU it chose */
    } else {
        if (tuning_log) {
            rc = tether_tuning_log_apply(tuning_log, &o, &tlog, &tns);
        }
        if (rc) {
            tether__py_err_take(&e, rc);
        } else {
            err_take_detail(&e, tether_compile_model(model, out_dir, &o, &res));
        }
        if (tuning_log && !rc) {
            free(tns);
            tether_tuning_log_close(&tlog);
        }
    }
    char chosen_target[64], chosen_cpu[128];
    snprintf(chosen_target, sizeof chosen_target, "%s",
             o.build.target ? o.build.target : "x86_64-linux");
    snprintf(chosen_cpu, sizeof chosen_cpu, "%s", o.build.cpu ? o.build.cpu : "");
    compiler_unlock(ts);
    Py_XDECREF(fast);
    PyObject *bound = bound_list(&lo);
    load_opts_release(&lo);
    if (e.rc || e.closed) {
        Py_XDECREF(bound);
        return tether__py_err_raise(&e, "the session");
    }
    PyObject *d = PyDict_New();
    if (!d) {
        Py_XDECREF(bound);
        return NULL;
    }
    tether__py_set_item(d, "nodes_in", PyLong_FromLong(res.nnodes_in));
    tether__py_set_item(d, "nodes_out", PyLong_FromLong(res.nnodes_out));
    tether__py_set_item(d, "workspace_bytes", PyLong_FromLongLong(res.workspace_size));
    tether__py_set_item(d, "params_bytes", PyLong_FromSize_t(res.params_bytes));
    tether__py_set_item(d, "codegen_seconds", PyFloat_FromDouble(res.codegen_seconds));
    tether__py_set_item(d, "built", PyBool_FromLong(res.built));
    tether__py_set_item(d, "library", tether__py_str(res.build.library));
    tether__py_set_item(d, "entry", tether__py_str(res.entry));
    tether__py_set_item(d, "text", PyLong_FromUnsignedLongLong(res.build.sizes.text));
    tether__py_set_item(d, "data", PyLong_FromUnsignedLongLong(res.build.sizes.data));
    tether__py_set_item(d, "bss", PyLong_FromUnsignedLongLong(res.build.sizes.bss));
    tether__py_set_item(d, "code", PyLong_FromUnsignedLongLong(res.build.sizes.code));
    tether__py_set_item(d, "static_stack",
                        res.build.stack.bounded ? PyLong_FromLongLong(res.build.stack.bytes)
                                                : Py_NewRef(Py_None));
    tether__py_set_item(d, "tunable_kernels", PyLong_FromLong(res.ntunable));
    tether__py_set_item(d, "tuned_kernels", PyLong_FromLong(res.ntuned));
    tether__py_set_item(d, "bound", bound);
    tether__py_set_item(d, "target", tether__py_str(chosen_target));
    tether__py_set_item(d, "cpu", tether__py_str(chosen_cpu));
    if (PyErr_Occurred()) {
        Py_DECREF(d);
        return NULL;
    }
    return d;
}

/* Loads a model (under the compiler lock, GIL released); *g must be closed by the caller. */
static int load_graph(const char *model, load_opts *lo, tether_ir_graph *g, tpy_err *e) {
    PyThreadState *ts = compiler_lock();
    memset(g, 0, sizeof *g);
    err_take_detail(e, tether_model_load_with(model, &lo->lo, g));
    compiler_unlock(ts);
    return e->rc;
}

static PyObject *tensor_list(const tether_ir_graph *g, const int *idx, int n) {
    PyObject *l = PyList_New(0);
    for (int i = 0; l && i < n; i++) {
        const tether_ir_tensor *t = &g->tensors[idx[i]];
        PyObject *item = Py_BuildValue("(NNN)", tether__py_str(t->name ? t->name : ""),
                                       tether__py_dtype_str(t->dtype),
                                       tether__py_shape_tuple(t->ndim, t->shape));
        if (!item || PyList_Append(l, item)) {
            Py_XDECREF(item);
            Py_CLEAR(l);
            break;
        }
        Py_DECREF(item);
    }
    return l;
}

PyObject *tether__py_model_signature(PyObject *self, PyObject *args, PyObject *kw) {
    (void)self;
    static char *kwlist[] = {"model",       "input_shapes", "input_values",
                             "input_names", "loop_max",     NULL};
    const char *model;
    PyObject *shapes = Py_None, *values = Py_None, *names = Py_None;
    long long loop_max = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s|OOOL", kwlist, &model, &shapes, &values, &names,
                                     &loop_max)) {
        return NULL;
    }
    load_opts mine;
    if (load_opts_parse(&mine, shapes, values, names)) {
        return NULL;
    }
    if (loop_max_set(&mine, loop_max)) {
        load_opts_release(&mine);
        return NULL;
    }
    tether_ir_graph g;
    tpy_err e = {0};
    load_graph(model, &mine, &g, &e);
    PyObject *bound = bound_list(&mine);
    load_opts_release(&mine);
    if (e.rc) {
        Py_XDECREF(bound);
        tether_ir_close(&g);
        return tether__py_err_raise(&e, "");
    }
    PyObject *r =
        Py_BuildValue("{s:N,s:N,s:N,s:N,s:i}", "name", tether__py_str(g.name ? g.name : ""),
                      "inputs", tensor_list(&g, g.inputs, g.ninputs), "outputs",
                      tensor_list(&g, g.outputs, g.noutputs), "bound", bound, "nodes", g.nnodes);
    tether_ir_close(&g);
    return r;
}

/* The reference interpreter on inputs of any element type (after binding, checked against the
 * signature by the caller): a list of (name, dtype, shape, bytes) of the outputs. */
PyObject *tether__py_interpret(PyObject *self, PyObject *args, PyObject *kw) {
    (void)self;
    static char *kwlist[] = {"model",    "inputs", "input_shapes", "input_values", "input_names",
                             "loop_max", NULL};
    const char *model;
    PyObject *ins, *shapes = Py_None, *values = Py_None, *names = Py_None;
    long long loop_max = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "sO|OOOL", kwlist, &model, &ins, &shapes, &values,
                                     &names, &loop_max)) {
        return NULL;
    }
    PyObject *fin = PySequence_Fast(ins, "inputs must be a sequence of buffers");
    if (!fin) {
        return NULL;
    }
    load_opts mine;
    if (load_opts_parse(&mine, shapes, values, names) || loop_max_set(&mine, loop_max)) {
        load_opts_release(&mine);
        Py_DECREF(fin);
        return NULL;
    }
    PyObject *ret = NULL;
    tether_ir_graph g;
    tpy_err e = {0};
    Py_ssize_t nin = PySequence_Fast_GET_SIZE(fin), got = 0;
    Py_buffer *bufs = NULL;
    const void **inp = NULL;
    void **outp = NULL;
    int nout = 0;
    if (load_graph(model, &mine, &g, &e)) {
        tether__py_err_raise(&e, "");
        goto done;
    }
    if (nin != g.ninputs) {
        PyErr_Format(PyExc_ValueError, "%s has %d run-time inputs, %zd given", model, g.ninputs,
                     nin);
        goto done;
    }
    bufs = calloc((size_t)nin + 1, sizeof *bufs);
    inp = calloc((size_t)nin + 1, sizeof *inp);
    outp = calloc((size_t)g.noutputs + 1, sizeof *outp);
    if (!bufs || !inp || !outp) {
        PyErr_NoMemory();
        goto done;
    }
    for (; got < nin; got++) {
        const tether_ir_tensor *t = &g.tensors[g.inputs[got]];
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(fin, got), &bufs[got],
                               PyBUF_C_CONTIGUOUS)) {
            goto done;
        }
        size_t want = tether_ir_tensor_bytes(t); /* any element type (checked by the caller) */
        if ((size_t)bufs[got].len != want) {
            PyErr_Format(PyExc_ValueError, "input '%s': %zd bytes, the model's is %zu bytes",
                         t->name ? t->name : "", bufs[got].len, want);
            got++;
            goto done;
        }
        inp[got] = bufs[got].buf;
    }
    for (; nout < g.noutputs; nout++) {
        size_t n = tether_ir_tensor_bytes(&g.tensors[g.outputs[nout]]);
        outp[nout] = calloc(n ? n : 1, 1);
        if (!outp[nout]) {
            PyErr_NoMemory();
            goto done;
        }
    }
    PyThreadState *ts = compiler_lock();
    err_take_detail(&e, tether_interp_run_typed(&g, inp, outp));
    compiler_unlock(ts);
    if (e.rc) {
        tether__py_err_raise(&e, "");
        goto done;
    }
    ret = PyList_New(0);
    for (int i = 0; ret && i < g.noutputs; i++) {
        const tether_ir_tensor *t = &g.tensors[g.outputs[i]];
        int64_t shape[TETHER_IR_MAX_NDIM];
        memcpy(shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
        size_t nbytes = tether_ir_tensor_bytes(t);
        int k = tether_ir_extent_output(&g, i);
        if (t->dyn_dim < 0) {
            continue; /* an extent output: the shape of the output it measures has it */
        }
        if (k >= 0) { /* a data-dependent size: the actual shape, dense at the start */
            memcpy(&shape[t->dyn_dim - 1], outp[k], sizeof(int64_t));
            nbytes = nbytes / (size_t)(t->shape[t->dyn_dim - 1] ? t->shape[t->dyn_dim - 1] : 1) *
                     (size_t)shape[t->dyn_dim - 1];
        }
        PyObject *item = Py_BuildValue(
            "(NNNy#)", tether__py_str(t->name ? t->name : ""), tether__py_dtype_str(t->dtype),
            tether__py_shape_tuple(t->ndim, shape), (const char *)outp[i], (Py_ssize_t)nbytes);
        if (!item || PyList_Append(ret, item)) {
            Py_XDECREF(item);
            Py_CLEAR(ret);
            break;
        }
        Py_DECREF(item);
    }
done:
    for (Py_ssize_t i = 0; bufs && i < got; i++) {
        if (bufs[i].obj) {
            PyBuffer_Release(&bufs[i]);
        }
    }
    for (int i = 0; outp && i < nout; i++) {
        free(outp[i]);
    }
    free(bufs);
    free(inp);
    free(outp);
    free(e.detail);
    tether_ir_close(&g);
    load_opts_release(&mine);
    Py_DECREF(fin);
    return ret;
}

PyObject *tether__py_targets(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    int n = 0;
    const tether_target *t = tether_targets(&n);
    PyObject *l = PyList_New(0);
    for (int i = 0; l && i < n; i++) {
        PyObject *item =
            Py_BuildValue("{s:N,s:N,s:N,s:N}", "name", tether__py_str(t[i].name), "kind",
                          tether__py_str(t[i].kind == TETHER_TARGET_SHARED ? "shared" : "static"),
                          "description", tether__py_str(t[i].description ? t[i].description : ""),
                          "available", PyBool_FromLong(tether_target_available(&t[i])));
        if (!item || PyList_Append(l, item)) {
            Py_XDECREF(item);
            Py_CLEAR(l);
            break;
        }
        Py_DECREF(item);
    }
    return l;
}
#endif /* TETHER_HAVE_COMPILER */
