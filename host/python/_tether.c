/*
 * _tether: the CPython extension under the `tether` Python package (host/python/tether/,
 * docs/python.md). A thin layer over the host library (tether/host.h, tether/artifact.h,
 * tether/npy.h, tether/stats.h) and, when built with it, the compiler (tether/compiler.h, the ONNX
 * front end): sessions, uploads, remote arrays, calls and TIME, artifacts, compiling a model and
 * the reference interpreter. Arrays cross this layer as plain buffers (the buffer protocol) and
 * dtype names; numpy conversion and every friendly check live in the Python package.
 * This file: errors, conversions, the Artifact object, the module's functions and PyInit; the
 * Session object is in _tether_session.c, the compiler's functions in _tether_compiler.c, what
 * they share in _tether.h.
 *
 * What must stay true:
 *  - No Python-visible crash: every argument is checked here too (a bad handle is the device's
 *    error, a bad size or type a ValueError/TypeError), and a closed session or freed artifact
 *    is an error, never a dangling pointer.
 *  - Every blocking library call runs with the GIL released and, for a session, under the
 *    session's lock (one request at a time: the host library is one thread per session). No
 *    Python code runs while that lock is held, so Python code (a __del__ freeing an array) can
 *    never wait on a lock its own thread holds.
 *  - Artifacts prepared on a session are on its list: closing or reconnecting the session frees
 *    them first (their remote arrays belong to that session), and a prepared artifact keeps its
 *    session object alive.
 *  - Library errors become tether.Error (a RuntimeError) with .status, .status_name and the
 *    library's message, copied on the thread that made the call. A device URL that does not
 *    parse is a bad argument: ValueError, before anything is started.
 *  - The compiler and the interpreter run under one process-wide lock (their caches are shared);
 *    compiling for a session's device (tether_compile_for_device) takes that lock, then the
 *    session's (never the other order).
 *  - Artifacts are prepared with the host library's device loader (tether_device_prepare), so an
 *    MCU board links the artifact's library against its firmware like the CLI does.
 */
#include "_tether.h"

static PyObject *g_error; /* tether.Error */

/* ---- errors ---------------------------------------------------------------------------------- */

void tether__py_err_take(tpy_err *e, int rc) {
    e->rc = rc;
    if (rc) {
        snprintf(e->msg, sizeof e->msg, "%s", tether_last_error());
    }
}

PyObject *tether__py_str(const char *s) {
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
}

/* Raises tether.Error(message) with .status (the negative tether_status) and .status_name. */
static PyObject *raise_status(int rc, const char *msg) {
    PyObject *text = tether__py_str(msg && *msg ? msg : tether_status_name(rc));
    if (!text) {
        return NULL;
    }
    PyObject *exc = PyObject_CallOneArg(g_error, text);
    Py_DECREF(text);
    if (!exc) {
        return NULL;
    }
    PyObject *st = PyLong_FromLong(rc), *name = tether__py_str(tether_status_name(rc));
    if (st && name) {
        PyObject_SetAttrString(exc, "status", st);
        PyObject_SetAttrString(exc, "status_name", name);
    }
    Py_XDECREF(st);
    Py_XDECREF(name);
    PyErr_SetObject(g_error, exc);
    Py_DECREF(exc);
    return NULL;
}

PyObject *tether__py_err_raise(tpy_err *e, const char *closed_what) {
    PyObject *r;
    if (PyErr_CheckSignals() < 0) { /* Ctrl-C during the request: KeyboardInterrupt wins */
        r = NULL;
    } else if (e->closed) {
        r = PyErr_Format(PyExc_ValueError, "%s is closed", closed_what);
    } else {
        r = raise_status(e->rc, e->detail ? e->detail : e->msg);
    }
    free(e->detail);
    e->detail = NULL;
    return r;
}

/* ---- small conversions ----------------------------------------------------------------------- */

PyObject *tether__py_shape_tuple(int ndim, const int64_t *shape) {
    PyObject *t = PyTuple_New(ndim);
    for (int i = 0; t && i < ndim; i++) {
        PyObject *v = PyLong_FromLongLong(shape[i]);
        if (!v) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, v);
    }
    return t;
}

PyObject *tether__py_dtype_str(DLDataType dt) {
    char name[TETHER_DTYPE_NAME_MAX];
    if (tether_dtype_name(dt, name, sizeof name)) {
        snprintf(name, sizeof name, "code%u_bits%u", (unsigned)dt.code, (unsigned)dt.bits);
    }
    return tether__py_str(name);
}

/* A sequence of non-negative ints into shape[]; *ndim its length. */
int tether__py_parse_shape(PyObject *seq, int64_t *shape, int *ndim) {
    PyObject *fast = PySequence_Fast(seq, "shape must be a sequence of ints");
    if (!fast) {
        return -1;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    if (n > TETHER_MAX_NDIM) {
        Py_DECREF(fast);
        PyErr_Format(PyExc_ValueError, "shape has %zd dimensions, at most %d are supported", n,
                     TETHER_MAX_NDIM);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, i));
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(fast);
            PyErr_SetString(PyExc_TypeError, "shape must be a sequence of ints");
            return -1;
        }
        if (v < 0) {
            Py_DECREF(fast);
            PyErr_Format(PyExc_ValueError, "shape extent %lld is negative", v);
            return -1;
        }
        shape[i] = v;
    }
    *ndim = (int)n;
    Py_DECREF(fast);
    return 0;
}

int tether__py_parse_dtype(const char *name, DLDataType *dt) {
    if (tether_dtype_parse(name, dt)) {
        PyErr_Format(PyExc_ValueError, "unknown dtype '%s'", name);
        return -1;
    }
    return 0;
}

void tether__py_set_item(PyObject *d, const char *key, PyObject *v) {
    if (v) {
        PyDict_SetItemString(d, key, v);
        Py_DECREF(v);
    }
}

PyObject *tether__py_time_stats_dict(const tether_time_stats *ts) {
    PyObject *d = PyDict_New();
    if (!d) {
        return NULL;
    }
    PyObject *secs = PyList_New(0);
    for (uint32_t i = 0; secs && i < ts->repeat && i < 32; i++) {
        PyObject *v = PyFloat_FromDouble(ts->seconds[i]);
        if (v) {
            PyList_Append(secs, v);
            Py_DECREF(v);
        }
    }
    tether__py_set_item(d, "seconds", secs);
    tether__py_set_item(d, "mean", PyFloat_FromDouble(ts->mean));
    tether__py_set_item(d, "median", PyFloat_FromDouble(ts->median));
    tether__py_set_item(d, "min", PyFloat_FromDouble(ts->min));
    tether__py_set_item(d, "max", PyFloat_FromDouble(ts->max));
    tether__py_set_item(d, "number", PyLong_FromUnsignedLong(ts->number));
    tether__py_set_item(d, "repeat", PyLong_FromUnsignedLong(ts->repeat));
    tether__py_set_item(d, "zero_timer", PyBool_FromLong(ts->zero_timer));
    if (PyErr_Occurred()) {
        Py_DECREF(d);
        return NULL;
    }
    return d;
}

static PyObject *remote_value(const tether_remote_arg *v) {
    switch (v->type_code) {
    case TETHER_TYPE_INT:
        return PyLong_FromLongLong(v->v.i);
    case TETHER_TYPE_UINT:
        return PyLong_FromUnsignedLongLong(v->v.u);
    case TETHER_TYPE_FLOAT:
        return PyFloat_FromDouble(v->v.f);
    case TETHER_TYPE_HANDLE:
    case TETHER_TYPE_DLTENSOR:
        return PyLong_FromUnsignedLongLong(v->v.array);
    default:
        Py_RETURN_NONE;
    }
}

PyObject *tether__py_call_result_tuple(const tether_call_result *r) {
    PyObject *val = remote_value(&r->ret_value);
    if (!val) {
        return NULL;
    }
    return Py_BuildValue("(iKKN)", (int)r->ret, (unsigned long long)r->elapsed_ns,
                         (unsigned long long)r->stack_bytes, val);
}

/* ---- Artifact -------------------------------------------------------------------------------- */

static size_t art_bytes(const tpy_artifact *self, int output, int i) {
    if (i < TETHER_ARTIFACT_MAX_IO) {
        return output ? self->out_bytes[i] : self->in_bytes[i];
    }
    return output ? self->ocl_out_bytes[i] : self->ocl_in_bytes[i];
}

static int artifact_init(tpy_artifact *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"dir", NULL};
    const char *dir;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s", kwlist, &dir)) {
        return -1;
    }
    if (self->a || self->sess) {
        PyErr_SetString(PyExc_ValueError, "the artifact is open already");
        return -1;
    }
    tether_artifact *a = NULL;
    tpy_err e = {0};
    PyThreadState *ts = PyEval_SaveThread();
    tether__py_err_take(&e, tether_artifact_open(dir, &a));
    PyEval_RestoreThread(ts);
    if (e.rc) {
        tether__py_err_raise(&e, "the artifact");
        return -1;
    }
    self->a = a;
    self->nin = tether_artifact_num_inputs(a);
    self->nout = tether_artifact_num_outputs(a);
    self->nkernels = tether_artifact_num_kernels(a);
    if (self->nin > TETHER_ARTIFACT_MAX_IO || self->nout > TETHER_ARTIFACT_MAX_IO) {
        self->ocl_in_bytes = calloc((size_t)self->nin + 1, sizeof(size_t));
        self->ocl_out_bytes = calloc((size_t)self->nout + 1, sizeof(size_t));
        if (!self->ocl_in_bytes || !self->ocl_out_bytes) {
            PyErr_NoMemory();
            return -1;
        }
    }
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < (k ? self->nout : self->nin); i++) {
            tether_artifact_io io;
            memset(&io, 0, sizeof io);
            tether_artifact_io_of(a, k, i, &io);
            size_t *slot = i < TETHER_ARTIFACT_MAX_IO
                               ? (k ? &self->out_bytes[i] : &self->in_bytes[i])
                               : (k ? &self->ocl_out_bytes[i] : &self->ocl_in_bytes[i]);
            *slot = io.nbytes;
        }
    }
    return 0;
}

/* Frees the artifact (its remote arrays on the session first) and leaves the session's list. */
static void artifact_close_now(tpy_artifact *self) {
    if (self->sess) {
        tpy_session *s = self->sess;
        PyThreadState *ts = tether__py_sess_lock(s);
        if (self->attached) {
            if (self->prev) {
                self->prev->next = self->next;
            } else {
                s->arts = self->next;
            }
            if (self->next) {
                self->next->prev = self->prev;
            }
            self->attached = 0;
            self->next = self->prev = NULL;
        }
        tether_artifact_free(self->a);
        self->a = NULL;
        tether__py_sess_unlock(s, ts);
        self->sess = NULL;
        Py_DECREF(s);
    } else if (self->a) {
        tether_artifact_free(self->a);
        self->a = NULL;
    }
}

static void artifact_dealloc(tpy_artifact *self) {
    artifact_close_now(self);
    free(self->ocl_in_bytes);
    free(self->ocl_out_bytes);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *artifact_close(tpy_artifact *self, PyObject *unused) {
    (void)unused;
    artifact_close_now(self);
    Py_RETURN_NONE;
}

/* Everything the Python layer needs about the artifact, read once before prepare (afterwards the
 * artifact may be freed by its session at any time, so this refuses). */
static PyObject *artifact_info(tpy_artifact *self, PyObject *unused) {
    (void)unused;
    if (!self->a || self->sess) {
        return PyErr_Format(PyExc_ValueError, "info() is read before prepare()");
    }
    tether_artifact *a = self->a;
    PyObject *d = PyDict_New();
    if (!d) {
        return NULL;
    }
    tether_artifact_backend b = tether_artifact_backend_of(a);
    tether__py_set_item(d, "backend", tether__py_str(b == TETHER_ARTIFACT_OPENCL ? "opencl" : "c"));
    tether__py_set_item(d, "entry", tether__py_str(tether_artifact_entry(a)));
    tether__py_set_item(d, "target", tether__py_str(tether_artifact_target(a)));
    tether__py_set_item(d, "cpu", tether__py_str(tether_artifact_cpu(a)));
    for (int k = 0; k < 2; k++) {
        PyObject *l = PyList_New(0);
        for (int i = 0; l && i < (k ? self->nout : self->nin); i++) {
            tether_artifact_io io;
            if (tether_artifact_io_of(a, k, i, &io)) {
                continue;
            }
            PyObject *t =
                Py_BuildValue("(NNNn)", tether__py_str(io.name), tether__py_dtype_str(io.dtype),
                              tether__py_shape_tuple(io.ndim, io.shape), (Py_ssize_t)io.nbytes);
            if (t) {
                PyList_Append(l, t);
                Py_DECREF(t);
            }
        }
        tether__py_set_item(d, k ? "outputs" : "inputs", l);
    }
    /* outputs of data-dependent size: (output, dimension, its extent output) */
    PyObject *dl = PyList_New(0);
    for (int i = 0; dl && i < self->nout; i++) {
        tether_artifact_io io;
        if (tether_artifact_io_of(a, 1, i, &io) || io.dynamic_dim < 0) {
            continue;
        }
        PyObject *t = Py_BuildValue("(iii)", i, io.dynamic_dim, io.extent_output);
        if (t) {
            PyList_Append(dl, t);
            Py_DECREF(t);
        }
    }
    tether__py_set_item(d, "dynamic", dl);
    tether__py_set_item(d, "model_outputs", PyLong_FromLong(tether_artifact_num_model_outputs(a)));
    PyObject *kl = PyList_New(0);
    for (int i = 0; kl && i < self->nkernels; i++) {
        const char *kernel = "", *node = "";
        tether_artifact_kernel(a, i, &kernel, &node);
        PyObject *t = Py_BuildValue("(NN)", tether__py_str(kernel ? kernel : ""),
                                    tether__py_str(node ? node : ""));
        if (t) {
            PyList_Append(kl, t);
            Py_DECREF(t);
        }
    }
    tether__py_set_item(d, "kernels", kl);
    if (PyErr_Occurred()) {
        Py_DECREF(d);
        return NULL;
    }
    return d;
}

/* The MCU firmware options of the host library (tether/device_compile.h) from Python: firmware
 * None or a path, dirs None or a sequence of at most 8 paths. *fast holds the strings until the
 * caller drops it. */
int tether__py_firmware_opts(tether_device_compile_options *o, const char *firmware, PyObject *dirs,
                             const char **dirv, PyObject **fast) {
    tether_device_compile_options_init(o);
    o->firmware = firmware;
    *fast = NULL;
    if (!dirs || dirs == Py_None) {
        return 0;
    }
    *fast = PySequence_Fast(dirs, "firmware_dirs must be a sequence of str");
    if (!*fast) {
        return -1;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(*fast);
    if (n > 8) {
        Py_CLEAR(*fast);
        PyErr_SetString(PyExc_ValueError, "at most 8 firmware_dirs");
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        dirv[i] = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(*fast, i));
        if (!dirv[i]) {
            Py_CLEAR(*fast);
            return -1;
        }
    }
    o->firmware_dirs = dirv;
    o->nfirmware_dirs = (int)n;
    return 0;
}

static PyObject *artifact_prepare(tpy_artifact *self, PyObject *args) {
    PyObject *sobj, *dirs = Py_None;
    const char *firmware = NULL;
    if (!PyArg_ParseTuple(args, "O!|zO", &tether__py_session_type, &sobj, &firmware, &dirs)) {
        return NULL;
    }
    tether_device_compile_options dco;
    const char *dirv[8];
    PyObject *fast;
    if (tether__py_firmware_opts(&dco, firmware, dirs, dirv, &fast)) {
        return NULL;
    }
    if (!self->a || self->sess || self->prepared) {
        Py_XDECREF(fast);
        return PyErr_Format(PyExc_ValueError, !self->a ? "the artifact is closed"
                                                       : "the artifact was prepared already "
                                                         "(once only)");
    }
    tpy_session *s = (tpy_session *)sobj;
    self->prepared = 1;
    Py_INCREF(s);
    self->sess = s; /* from now on a is touched under s's lock only */
    tpy_err e = {0};
    PyThreadState *ts = tether__py_sess_lock(s);
    if (!s->s) {
        e.closed = 1;
    } else {
        /* on the list before prepare: a failed prepare may have allocated arrays to free */
        self->next = s->arts;
        self->prev = NULL;
        if (s->arts) {
            s->arts->prev = self;
        }
        s->arts = self;
        self->attached = 1;
        /* the device's loader: .o/.a linked for an MCU board (tether/device_compile.h) */
        tether__py_err_take(&e, tether_device_prepare(self->a, s->s, &dco));
    }
    tether__py_sess_unlock(s, ts);
    Py_XDECREF(fast);
    if (e.closed || e.rc) {
        return tether__py_err_raise(&e, "the session");
    }
    Py_RETURN_NONE;
}

static PyObject *artifact_run(tpy_artifact *self, PyObject *args) {
    PyObject *ins, *outs;
    if (!PyArg_ParseTuple(args, "OO", &ins, &outs)) {
        return NULL;
    }
    if (!self->sess) {
        return PyErr_Format(PyExc_ValueError, "%s",
                            self->a ? "prepare the artifact on a session first"
                                    : "the artifact was closed");
    }
    PyObject *fin = PySequence_Fast(ins, "inputs must be a sequence of buffers");
    if (!fin) {
        return NULL;
    }
    PyObject *fout = PySequence_Fast(outs, "outputs must be a sequence of writable buffers");
    if (!fout) {
        Py_DECREF(fin);
        return NULL;
    }
    Py_ssize_t nin = PySequence_Fast_GET_SIZE(fin), nout = PySequence_Fast_GET_SIZE(fout);
    PyObject *ret = NULL;
    Py_buffer *bufs = NULL;
    const void **inp = NULL;
    void **outp = NULL;
    uint64_t *kernel_ns = NULL;
    Py_ssize_t got = 0;
    if (nin != self->nin || nout != self->nout) {
        PyErr_Format(PyExc_ValueError,
                     "the artifact has %d inputs and %d outputs, %zd and %zd given", self->nin,
                     self->nout, nin, nout);
        goto done;
    }
    bufs = calloc((size_t)(nin + nout) + 1, sizeof *bufs);
    inp = calloc((size_t)nin + 1, sizeof *inp);
    outp = calloc((size_t)nout + 1, sizeof *outp);
    kernel_ns = calloc((size_t)self->nkernels + 1, sizeof *kernel_ns);
    if (!bufs || !inp || !outp || !kernel_ns) {
        PyErr_NoMemory();
        goto done;
    }
    for (; got < nin + nout; got++) {
        int out = got >= nin;
        Py_ssize_t i = out ? got - nin : got;
        PyObject *o = PySequence_Fast_GET_ITEM(out ? fout : fin, i);
        if (PyObject_GetBuffer(o, &bufs[got],
                               out ? PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS : PyBUF_C_CONTIGUOUS)) {
            goto done;
        }
        size_t want = art_bytes(self, out, (int)i);
        if ((size_t)bufs[got].len != want) {
            PyErr_Format(PyExc_ValueError, "%s %zd: %zd bytes, the artifact's is %zu bytes",
                         out ? "output" : "input", i, bufs[got].len, want);
            got++;
            goto done;
        }
        if (out) {
            outp[i] = bufs[got].buf;
        } else {
            inp[i] = bufs[got].buf;
        }
    }
    tether_call_result r;
    memset(&r, 0, sizeof r);
    tpy_err e = {0};
    PyThreadState *ts = tether__py_sess_lock(self->sess);
    if (!self->sess->s || !self->a) {
        e.closed = 1;
    } else {
        tether__py_err_take(&e, tether_artifact_run(self->a, inp, outp, &r, kernel_ns));
    }
    tether__py_sess_unlock(self->sess, ts);
    if (e.closed || e.rc) {
        tether__py_err_raise(&e, "the session");
        goto done;
    }
    PyObject *kl = PyList_New(0);
    for (int i = 0; kl && i < self->nkernels; i++) {
        PyObject *v = PyLong_FromUnsignedLongLong(kernel_ns[i]);
        if (v) {
            PyList_Append(kl, v);
            Py_DECREF(v);
        }
    }
    PyObject *cr = tether__py_call_result_tuple(&r);
    if (kl && cr) {
        ret = Py_BuildValue("(NN)", cr, kl);
    } else {
        Py_XDECREF(kl);
        Py_XDECREF(cr);
    }
done:
    for (Py_ssize_t i = 0; bufs && i < got; i++) {
        if (bufs[i].obj) {
            PyBuffer_Release(&bufs[i]);
        }
    }
    free(bufs);
    free(inp);
    free(outp);
    free(kernel_ns);
    Py_DECREF(fin);
    Py_DECREF(fout);
    return ret;
}

static PyObject *artifact_time(tpy_artifact *self, PyObject *args) {
    unsigned int number, repeat, min_repeat_ms, cooldown_ms;
    if (!PyArg_ParseTuple(args, "IIII", &number, &repeat, &min_repeat_ms, &cooldown_ms)) {
        return NULL;
    }
    if (number < 1 || repeat < 1 || repeat > 32) {
        return PyErr_Format(PyExc_ValueError, "number must be >= 1 and repeat in 1..32");
    }
    if (!self->sess) {
        return PyErr_Format(PyExc_ValueError, "%s",
                            self->a ? "prepare the artifact on a session first"
                                    : "the artifact was closed");
    }
    double *kmed = calloc((size_t)self->nkernels + 1, sizeof *kmed);
    if (!kmed) {
        return PyErr_NoMemory();
    }
    tether_time_stats st;
    memset(&st, 0, sizeof st);
    tpy_err e = {0};
    PyThreadState *ts = tether__py_sess_lock(self->sess);
    if (!self->sess->s || !self->a) {
        e.closed = 1;
    } else {
        tether__py_err_take(&e, tether_artifact_time(self->a, number, repeat, min_repeat_ms,
                                                     cooldown_ms, &st, kmed));
    }
    tether__py_sess_unlock(self->sess, ts);
    if (e.closed || e.rc) {
        free(kmed);
        return tether__py_err_raise(&e, "the session");
    }
    PyObject *d = tether__py_time_stats_dict(&st);
    PyObject *kl = d ? PyList_New(0) : NULL;
    for (int i = 0; kl && i < self->nkernels; i++) {
        PyObject *v = PyFloat_FromDouble(kmed[i]);
        if (v) {
            PyList_Append(kl, v);
            Py_DECREF(v);
        }
    }
    free(kmed);
    if (d && kl) {
        tether__py_set_item(d, "kernel_median", kl);
    } else {
        Py_CLEAR(d);
    }
    return d;
}

static PyMethodDef artifact_methods[] = {
    {"close", (PyCFunction)artifact_close, METH_NOARGS,
     "close(): frees the artifact (and its arrays on the device). Idempotent."},
    {"info", (PyCFunction)artifact_info, METH_NOARGS,
     "info() -> dict: backend, entry, target, cpu, inputs/outputs (name, dtype, shape, nbytes), "
     "dynamic ((output, dimension, extent output) per output of data-dependent size), "
     "model_outputs (the outputs before the extent outputs), "
     "kernels. Read before prepare()."},
    {"prepare", (PyCFunction)artifact_prepare, METH_VARARGS,
     "prepare(session, firmware=None, firmware_dirs=None): upload (.o/.a linked for an MCU "
     "board), load, params, arrays. Once."},
    {"run", (PyCFunction)artifact_run, METH_VARARGS,
     "run(inputs, outputs) -> ((ret, elapsed_ns, stack_bytes, value), kernel_ns)"},
    {"time", (PyCFunction)artifact_time, METH_VARARGS,
     "time(number, repeat, min_repeat_ms, cooldown_ms) -> dict"},
    {"profile", (PyCFunction)tether__py_artifact_profile, METH_VARARGS,
     "profile(inputs, outputs, runs, trace=None, json=None, svg=None) -> dict: per-node records "
     "of a profiling build (docs/profile.md)"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject tether__py_artifact_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tether._tether.Artifact",
    .tp_basicsize = sizeof(tpy_artifact),
    .tp_dealloc = (destructor)artifact_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Artifact(dir): a compiled artifact directory (low level; use tether.Artifact).",
    .tp_methods = artifact_methods,
    .tp_init = (initproc)artifact_init,
    .tp_new = PyType_GenericNew,
};

/* ---- module functions: arrays, statistics ---------------------------------------------------- */

static PyObject *mod_read_array(PyObject *self, PyObject *args) {
    (void)self;
    const char *path;
    if (!PyArg_ParseTuple(args, "s", &path)) {
        return NULL;
    }
    tether_npy n;
    memset(&n, 0, sizeof n);
    tpy_err e = {0};
    PyThreadState *ts = PyEval_SaveThread();
    tether__py_err_take(&e, tether_npy_read(path, &n));
    PyEval_RestoreThread(ts);
    if (e.rc) {
        return tether__py_err_raise(&e, "");
    }
    PyObject *r = Py_BuildValue("(NNy#)", tether__py_dtype_str(n.dtype),
                                tether__py_shape_tuple(n.ndim, n.shape), (const char *)n.data,
                                (Py_ssize_t)n.nbytes);
    tether_npy_free(&n);
    return r;
}

static PyObject *mod_url_check(PyObject *self, PyObject *args) {
    (void)self;
    const char *url;
    if (!PyArg_ParseTuple(args, "s", &url)) {
        return NULL;
    }
    if (tether_device_url_check(url)) {
        return raise_status(tether_last_status(), tether_last_error());
    }
    Py_RETURN_NONE;
}

/* A sequence of floats into a malloc'd array. */
static double *float_list(PyObject *seq, int *n) {
    PyObject *fast = PySequence_Fast(seq, "a sequence of numbers is expected");
    if (!fast) {
        return NULL;
    }
    Py_ssize_t len = PySequence_Fast_GET_SIZE(fast);
    double *x = malloc(((size_t)len + 1) * sizeof *x);
    if (!x) {
        Py_DECREF(fast);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < len; i++) {
        x[i] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(fast, i));
        if (PyErr_Occurred()) {
            free(x);
            Py_DECREF(fast);
            return NULL;
        }
    }
    Py_DECREF(fast);
    *n = (int)len;
    return x;
}

static PyObject *mod_spread(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *seq;
    if (!PyArg_ParseTuple(args, "O", &seq)) {
        return NULL;
    }
    int n = 0;
    double *x = float_list(seq, &n);
    if (!x) {
        return NULL;
    }
    if (n < 1) {
        free(x);
        return PyErr_Format(PyExc_ValueError, "spread of no values");
    }
    tether_spread sp;
    tether_spread_of(x, n, &sp);
    free(x);
    return Py_BuildValue("{s:i,s:d,s:d,s:d,s:d,s:d,s:d}", "n", sp.n, "median", sp.median, "q1",
                         sp.q1, "q3", sp.q3, "min", sp.min, "max", sp.max, "mean", sp.mean);
}

static PyObject *mod_ratio(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *sa, *sb;
    if (!PyArg_ParseTuple(args, "OO", &sa, &sb)) {
        return NULL;
    }
    int na = 0, nb = 0;
    double *a = float_list(sa, &na);
    if (!a) {
        return NULL;
    }
    double *b = float_list(sb, &nb);
    if (!b) {
        free(a);
        return NULL;
    }
    if (na < 1 || nb < 1) {
        free(a);
        free(b);
        return PyErr_Format(PyExc_ValueError, "ratio of no values");
    }
    tether_ratio r;
    tether_ratio_of(a, na, b, nb, &r);
    free(a);
    free(b);
    PyObject *lo = r.have_ci ? PyFloat_FromDouble(r.ci_low) : Py_NewRef(Py_None);
    PyObject *hi = r.have_ci ? PyFloat_FromDouble(r.ci_high) : Py_NewRef(Py_None);
    return Py_BuildValue("{s:d,s:N,s:N,s:d,s:s}", "estimate", r.estimate, "ci_low", lo, "ci_high",
                         hi, "p_value", r.p_value, "verdict", tether_verdict_name(r.verdict));
}

static PyMethodDef module_methods[] = {
    {"read_array", (PyCFunction)mod_read_array, METH_VARARGS,
     "read_array(path) -> (dtype, shape, bytes): a .npy file (or .pb with the ONNX front end)."},
    {"url_check", (PyCFunction)mod_url_check, METH_VARARGS,
     "url_check(url): raises tether.Error when the device URL does not parse."},
    {"spread", (PyCFunction)mod_spread, METH_VARARGS,
     "spread(seconds) -> dict: median, quartiles, min, max, mean."},
    {"ratio", (PyCFunction)mod_ratio, METH_VARARGS,
     "ratio(a, b) -> dict: Hodges-Lehmann estimate of b/a, 95% CI, Mann-Whitney p, verdict."},
#ifdef TETHER_HAVE_COMPILER
    {"compile", (PyCFunction)(void (*)(void))tether__py_compile, METH_VARARGS | METH_KEYWORDS,
     "compile(model, out_dir, abi=None, target=None, cpu=None, prefix=None, opt_level=-2, "
     "link_params=True, backend=None, texture_weights=False, input_shapes=None, "
     "input_values=None, tuning_log=None, input_names=None, session=None, firmware=None, "
     "firmware_dirs=None) -> dict (with session: compiled for its device, "
     "tether_compile_for_device)"},
    {"model_signature", (PyCFunction)(void (*)(void))tether__py_model_signature,
     METH_VARARGS | METH_KEYWORDS,
     "model_signature(model, input_shapes=None, input_values=None, input_names=None) -> dict"},
    {"interpret", (PyCFunction)(void (*)(void))tether__py_interpret, METH_VARARGS | METH_KEYWORDS,
     "interpret(model, inputs, input_shapes=None, input_values=None, input_names=None) -> "
     "[(name, dtype, shape, bytes)]"},
    {"targets", (PyCFunction)tether__py_targets, METH_NOARGS, "targets() -> [dict]"},
#endif
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef tether_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "tether._tether",
    .m_doc = "The C layer of the tether package: the host library and the compiler.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__tether(void) {
    if (PyType_Ready(&tether__py_session_type) < 0 || PyType_Ready(&tether__py_artifact_type) < 0) {
        return NULL;
    }
#ifdef TETHER_HAVE_COMPILER
    if (tether__py_compiler_init()) {
        return NULL;
    }
#endif
#ifdef TETHER_HAVE_ONNX
    tether_onnx_register();
    tether_onnx_register_arrays(); /* .pb arrays for read_array */
#endif
    PyObject *m = PyModule_Create(&tether_module);
    if (!m) {
        return NULL;
    }
    if (!g_error) {
        g_error = PyErr_NewExceptionWithDoc(
            "tether.Error",
            "A failure reported by tether: .status is the negative tether_status, .status_name "
            "its name (TETHER_ERR_IO, ...), str(e) the library's message.",
            PyExc_RuntimeError, NULL);
    }
    if (!g_error || PyModule_AddObjectRef(m, "Error", g_error) ||
        PyModule_AddObjectRef(m, "Session", (PyObject *)&tether__py_session_type) ||
        PyModule_AddObjectRef(m, "Artifact", (PyObject *)&tether__py_artifact_type)) {
        Py_DECREF(m);
        return NULL;
    }
#ifdef TETHER_HAVE_COMPILER
    PyModule_AddIntConstant(m, "HAVE_COMPILER", 1);
#else
    PyModule_AddIntConstant(m, "HAVE_COMPILER", 0);
#endif
#ifdef TETHER_HAVE_ONNX
    PyModule_AddIntConstant(m, "HAVE_ONNX", 1);
#else
    PyModule_AddIntConstant(m, "HAVE_ONNX", 0);
#endif
    PyModule_AddIntConstant(m, "MODULE_SHARED_OBJECT", TETHER_MODULE_SHARED_OBJECT);
    PyModule_AddIntConstant(m, "MODULE_OPENCL_SOURCE", TETHER_MODULE_OPENCL_SOURCE);
    PyModule_AddIntConstant(m, "MODULE_MCU_IMAGE", TETHER_MODULE_MCU_IMAGE);
    PyModule_AddIntConstant(m, "TYPE_INT", TETHER_TYPE_INT);
    PyModule_AddIntConstant(m, "TYPE_UINT", TETHER_TYPE_UINT);
    PyModule_AddIntConstant(m, "TYPE_FLOAT", TETHER_TYPE_FLOAT);
    PyModule_AddIntConstant(m, "TYPE_HANDLE", TETHER_TYPE_HANDLE);
    PyModule_AddIntConstant(m, "TYPE_NULL", TETHER_TYPE_NULL);
    PyModule_AddIntConstant(m, "TYPE_DLTENSOR", TETHER_TYPE_DLTENSOR);
    PyModule_AddIntConstant(m, "OPT_DEFAULT", -2);
    PyModule_AddIntConstant(m, "MAX_NDIM", TETHER_MAX_NDIM);
    return m;
}
