/*
 * _tether's Session object (_tether.h): opening a session on a device URL (HELLO, AUTH), its
 * info, faults and reconnect, device LOG lines, remote arrays, uploads and modules, functions,
 * CALL and TIME. Every library call runs with the GIL released under the session's lock
 * (SESSION_CALL); closing or reconnecting frees the artifacts prepared on the session first.
 */
#include "_tether.h"

PyThreadState *tether__py_sess_lock(tpy_session *s) {
    PyThreadState *ts = PyEval_SaveThread();
    PyThread_acquire_lock(s->lock, WAIT_LOCK);
    return ts;
}

void tether__py_sess_unlock(tpy_session *s, PyThreadState *ts) {
    PyThread_release_lock(s->lock);
    PyEval_RestoreThread(ts);
}

static void on_device_log(void *ctx, int level, const char *text) {
    tpy_session *s = ctx;
    int slot = (s->log_head + s->log_count) % TPY_LOG_LINES;
    if (s->log_count == TPY_LOG_LINES) { /* full: the oldest line goes */
        s->log_head = (s->log_head + 1) % TPY_LOG_LINES;
        s->dropped_logs++;
    } else {
        s->log_count++;
    }
    s->log_level[slot] = level;
    snprintf(s->log_text[slot], TPY_LOG_TEXT, "%s", text ? text : "");
}

/* Under the lock: frees every artifact prepared on s (their remote arrays first, unless the
 * session was lost) and takes them off the list. */
static void detach_artifacts_locked(tpy_session *s) {
    while (s->arts) {
        tpy_artifact *a = s->arts;
        s->arts = a->next;
        tether_artifact_free(a->a);
        a->a = NULL;
        a->next = a->prev = NULL;
        a->attached = 0;
    }
}

static PyObject *session_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    (void)args;
    (void)kw;
    tpy_session *self = (tpy_session *)type->tp_alloc(type, 0);
    if (!self) {
        return NULL;
    }
    self->lock = PyThread_allocate_lock();
    if (!self->lock) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    return (PyObject *)self;
}

static int session_init(tpy_session *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"url", "timeout_ms", "token", "tetherd", "wait_ms", "quiet", NULL};
    const char *url = "local:", *tetherd = NULL;
    int timeout_ms = 0, wait_ms = 0, quiet = 1;
    Py_buffer token = {0};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|siz*zip", kwlist, &url, &timeout_ms, &token,
                                     &tetherd, &wait_ms, &quiet)) {
        return -1;
    }
    if (self->is_open) {
        PyBuffer_Release(&token);
        PyErr_SetString(PyExc_ValueError, "the session is open already");
        return -1;
    }
    if (timeout_ms < 0) {
        PyBuffer_Release(&token);
        PyErr_SetString(PyExc_ValueError, "timeout_ms must be >= 0 (0 = the default, 30000)");
        return -1;
    }
    tether_session_options o;
    memset(&o, 0, sizeof o);
    o.timeout_ms = timeout_ms;
    o.token = token.buf && token.len ? token.buf : NULL;
    o.token_len = token.buf ? (size_t)token.len : 0;
    o.tetherd = tetherd;
    static const char *const quiet_args[] = {"--quiet", NULL};
    o.tetherd_args = quiet ? quiet_args : NULL;
    o.log = on_device_log;
    o.log_ctx = self;
    o.wait_ms = wait_ms;
    /* a URL that does not parse is a bad argument (ValueError), found before anything starts */
    if (tether_device_url_check(url)) {
        PyBuffer_Release(&token);
        PyErr_Format(PyExc_ValueError, "%s", tether_last_error());
        return -1;
    }
    tpy_err e = {0};
    tether_session *s = NULL;
    PyThreadState *ts = tether__py_sess_lock(self);
    tether__py_err_take(&e, tether_session_open(&s, url, &o));
    self->s = s;
    tether__py_sess_unlock(self, ts);
    PyBuffer_Release(&token);
    if (e.rc) {
        tether__py_err_raise(&e, "the session");
        return -1;
    }
    self->is_open = 1;
    return 0;
}

static void session_close_now(tpy_session *self) {
    if (!self->lock) {
        return;
    }
    PyThreadState *ts = tether__py_sess_lock(self);
    detach_artifacts_locked(self);
    tether_session_close(self->s);
    self->s = NULL;
    tether__py_sess_unlock(self, ts);
    self->is_open = 0;
}

static void session_dealloc(tpy_session *self) {
    session_close_now(self);
    if (self->lock) {
        PyThread_free_lock(self->lock);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *session_close(tpy_session *self, PyObject *unused) {
    (void)unused;
    session_close_now(self);
    Py_RETURN_NONE;
}

static PyObject *session_closed(tpy_session *self, void *closure) {
    (void)closure;
    return PyBool_FromLong(!self->is_open);
}

static PyObject *session_info(tpy_session *self, PyObject *unused) {
    (void)unused;
    tether_device_info d;
    tpy_err e = {0};
    PyThreadState *ts = tether__py_sess_lock(self);
    if (self->s) {
        d = *tether_session_info(self->s);
    } else {
        e.closed = 1;
    }
    tether__py_sess_unlock(self, ts);
    if (e.closed) {
        return tether__py_err_raise(&e, "the session");
    }
    PyObject *o = PyDict_New();
    if (!o) {
        return NULL;
    }
    tether__py_set_item(o, "protocol", PyLong_FromUnsignedLong(d.version));
    tether__py_set_item(o, "board", d.board[0] ? tether__py_str(d.board) : Py_NewRef(Py_None));
    tether__py_set_item(o, "boot_count",
                        d.board[0] ? PyLong_FromUnsignedLong(d.boot_count) : Py_NewRef(Py_None));
    tether__py_set_item(o, "triple", tether__py_str(d.triple));
    tether__py_set_item(o, "arch", tether__py_str(d.arch));
    tether__py_set_item(o, "endianness", tether__py_str(d.little_endian ? "little" : "big"));
    tether__py_set_item(o, "pointer_bits", PyLong_FromUnsignedLong(d.pointer_bits));
    tether__py_set_item(o, "max_frame_bytes", PyLong_FromUnsignedLong(d.max_frame));
    tether__py_set_item(o, "window", PyLong_FromUnsignedLong(d.window));
    tether__py_set_item(o, "clock", tether__py_str(d.clock_hz ? "device timer" : "nanoseconds"));
    tether__py_set_item(o, "clock_rate_hz",
                        d.clock_hz ? PyLong_FromUnsignedLongLong(d.clock_hz) : Py_NewRef(Py_None));
    PyObject *scopes = PyList_New(0);
    for (int k = 0; scopes && k < TETHER_SCOPE_COUNT; k++) {
        if (d.scopes & (1u << k)) {
            PyObject *n = tether__py_str(tether_scope_name((tether_scope)k));
            if (n) {
                PyList_Append(scopes, n);
                Py_DECREF(n);
            }
        }
    }
    tether__py_set_item(o, "scopes", scopes);
    PyObject *pools = PyDict_New();
    for (uint32_t k = 0; pools && k < d.num_pools && k < 8; k++) {
        PyObject *sz =
            d.pool_sizes[k] ? PyLong_FromUnsignedLongLong(d.pool_sizes[k]) : Py_NewRef(Py_None);
        if (sz) {
            PyDict_SetItemString(pools, d.pools[k], sz);
            Py_DECREF(sz);
        }
    }
    tether__py_set_item(o, "pools", pools);
    tether__py_set_item(o, "opencl", PyBool_FromLong(d.opencl));
    tether__py_set_item(o, "image_max_width", PyLong_FromUnsignedLong(d.image_max_width));
    tether__py_set_item(o, "image_max_height", PyLong_FromUnsignedLong(d.image_max_height));
    tether__py_set_item(o, "ram_bytes",
                        d.ram_size ? PyLong_FromUnsignedLongLong(d.ram_size) : Py_NewRef(Py_None));
    tether__py_set_item(o, "array_heap_bytes",
                        d.heap_size ? PyLong_FromUnsignedLongLong(d.heap_size)
                                    : Py_NewRef(Py_None));
    tether__py_set_item(o, "call_stack_bytes",
                        d.stack_size ? PyLong_FromUnsignedLongLong(d.stack_size)
                                     : Py_NewRef(Py_None));
    tether__py_set_item(o, "load_address",
                        d.load_size ? PyLong_FromUnsignedLongLong(d.load_addr)
                                    : Py_NewRef(Py_None));
    tether__py_set_item(o, "load_size_bytes",
                        d.load_size ? PyLong_FromUnsignedLongLong(d.load_size)
                                    : Py_NewRef(Py_None));
    tether__py_set_item(o, "exports_id",
                        d.load_size ? PyLong_FromUnsignedLong(d.exports_id) : Py_NewRef(Py_None));
    tether__py_set_item(o, "auth_required", PyBool_FromLong(d.auth_required));
    tether__py_set_item(o, "cpu", tether__py_str(d.cpu));
    tether__py_set_item(o, "cpu_features", tether__py_str(d.cpu_features));
    if (PyErr_Occurred()) {
        Py_DECREF(o);
        return NULL;
    }
    return o;
}

static PyObject *session_fault(tpy_session *self, PyObject *unused) {
    (void)unused;
    char fault[1024] = "";
    int has = 0;
    PyThreadState *ts = tether__py_sess_lock(self);
    const char *f = self->s ? tether_session_fault(self->s) : NULL;
    if (f) {
        has = 1;
        snprintf(fault, sizeof fault, "%s", f);
    }
    tether__py_sess_unlock(self, ts);
    if (!has) {
        Py_RETURN_NONE;
    }
    return tether__py_str(fault);
}

static PyObject *session_reconnect(tpy_session *self, PyObject *unused) {
    (void)unused;
    tpy_err e = {0};
    PyThreadState *ts = tether__py_sess_lock(self);
    if (!self->s) {
        e.closed = 1;
    } else {
        detach_artifacts_locked(self); /* their arrays belong to the old session */
        tether__py_err_take(&e, tether_session_reconnect(self->s));
    }
    tether__py_sess_unlock(self, ts);
    if (e.closed || e.rc) {
        return tether__py_err_raise(&e, "the session");
    }
    Py_RETURN_NONE;
}

static PyObject *session_take_log(tpy_session *self, PyObject *unused) {
    (void)unused;
    int levels[TPY_LOG_LINES];
    char(*texts)[TPY_LOG_TEXT] = malloc(sizeof(char[TPY_LOG_LINES][TPY_LOG_TEXT]));
    if (!texts) {
        return PyErr_NoMemory();
    }
    int n;
    PyThreadState *ts = tether__py_sess_lock(self);
    n = self->log_count;
    for (int i = 0; i < n; i++) {
        int k = (self->log_head + i) % TPY_LOG_LINES;
        levels[i] = self->log_level[k];
        memcpy(texts[i], self->log_text[k], TPY_LOG_TEXT);
    }
    self->log_count = 0;
    self->log_head = 0;
    tether__py_sess_unlock(self, ts);
    PyObject *l = PyList_New(0);
    for (int i = 0; l && i < n; i++) {
        PyObject *t = Py_BuildValue("(iN)", levels[i], tether__py_str(texts[i]));
        if (!t || PyList_Append(l, t)) {
            Py_XDECREF(t);
            Py_CLEAR(l);
            break;
        }
        Py_DECREF(t);
    }
    free(texts);
    return l;
}

static PyObject *session_alloc(tpy_session *self, PyObject *args) {
    PyObject *shape_obj;
    const char *dtype_name, *scope_name = "global", *pool = NULL;
    if (!PyArg_ParseTuple(args, "Os|zz", &shape_obj, &dtype_name, &scope_name, &pool)) {
        return NULL;
    }
    int64_t shape[TETHER_MAX_NDIM];
    int ndim = 0;
    DLDataType dt;
    tether_scope scope;
    if (tether__py_parse_shape(shape_obj, shape, &ndim) ||
        tether__py_parse_dtype(dtype_name, &dt)) {
        return NULL;
    }
    if (tether_scope_parse(scope_name ? scope_name : "global", &scope)) {
        return PyErr_Format(PyExc_ValueError, "%s", tether_last_error());
    }
    if (pool && tether_pool_name_check(pool)) {
        return PyErr_Format(PyExc_ValueError, "pool: %s", tether_last_error());
    }
    uint64_t handle = 0, nbytes = 0;
    tpy_err e = {0};
    SESSION_CALL(self, e,
                 tether_session_alloc(self->s, shape, ndim, dt, scope, pool, &handle, &nbytes));
    if (e.closed || e.rc) {
        return tether__py_err_raise(&e, "the session");
    }
    return Py_BuildValue("(KK)", (unsigned long long)handle, (unsigned long long)nbytes);
}

static PyObject *session_free(tpy_session *self, PyObject *args) {
    unsigned long long handle;
    if (!PyArg_ParseTuple(args, "K", &handle)) {
        return NULL;
    }
    tpy_err e = {0};
    SESSION_CALL(self, e, tether_session_free(self->s, handle));
    if (e.closed || e.rc) {
        return tether__py_err_raise(&e, "the session");
    }
    Py_RETURN_NONE;
}

static PyObject *session_copy_to(tpy_session *self, PyObject *args) {
    unsigned long long handle, offset;
    Py_buffer b;
    if (!PyArg_ParseTuple(args, "KKy*", &handle, &offset, &b)) {
        return NULL;
    }
    tpy_err e = {0};
    SESSION_CALL(self, e, tether_session_copy_to(self->s, handle, offset, b.buf, (size_t)b.len));
    PyBuffer_Release(&b);
    if (e.closed || e.rc) {
        return tether__py_err_raise(&e, "the session");
    }
    Py_RETURN_NONE;
}

static PyObject *session_copy_from(tpy_session *self, PyObject *args) {
    unsigned long long handle, offset;
    Py_buffer b;
    if (!PyArg_ParseTuple(args, "KKw*", &handle, &offset, &b)) {
        return NULL;
    }
    tpy_err e = {0};
    SESSION_CALL(self, e, tether_session_copy_from(self->s, handle, offset, b.buf, (size_t)b.len));
    PyBuffer_Release(&b);
    if (e.closed || e.rc) {
        return tether__py_err_raise(&e, "the session");
    }
    Py_RETURN_NONE;
}

static PyObject *session_upload(tpy_session *self, PyObject *args) {
    unsigned int kind;
    const char *name;
    Py_buffer b;
    if (!PyArg_ParseTuple(args, "Isy*", &kind, &name, &b)) {
        return NULL;
    }
    tpy_err e = {0};
    int cached = 0;
    PyThreadState *ts = tether__py_sess_lock(self);
    if (!self->s) {
        e.closed = 1;
    } else {
        tether__py_err_take(&e, tether_session_upload(self->s, kind, name, b.buf, (size_t)b.len));
    }
    if (self->s && !e.rc) {
        cached = tether_session_last_upload_cached(self->s);
    }
    tether__py_sess_unlock(self, ts);
    PyBuffer_Release(&b);
    if (e.closed || e.rc) {
        return tether__py_err_raise(&e, "the session");
    }
    return PyBool_FromLong(cached);
}

static PyObject *session_upload_file(tpy_session *self, PyObject *args) {
    unsigned int kind;
    const char *name, *path;
    if (!PyArg_ParseTuple(args, "Iss", &kind, &name, &path)) {
        return NULL;
    }
    tpy_err e = {0};
    int cached = 0;
    PyThreadState *ts = tether__py_sess_lock(self);
    if (!self->s) {
        e.closed = 1;
    } else {
        tether__py_err_take(&e, tether_session_upload_file(self->s, kind, name, path));
    }
    if (self->s && !e.rc) {
        cached = tether_session_last_upload_cached(self->s);
    }
    tether__py_sess_unlock(self, ts);
    if (e.closed || e.rc) {
        return tether__py_err_raise(&e, "the session");
    }
    return PyBool_FromLong(cached);
}

/* The module kind the device takes for a file (tether_artifact_module_kind): the kind, or -1
 * for object code an MCU needs linked first. */
static PyObject *session_module_kind(tpy_session *self, PyObject *args) {
    const char *path;
    if (!PyArg_ParseTuple(args, "s", &path)) {
        return NULL;
    }
    uint32_t kind = 0;
    int rc = 0;
    tpy_err e = {0};
    PyThreadState *ts = tether__py_sess_lock(self);
    if (!self->s) {
        e.closed = 1;
    } else {
        rc = tether_artifact_module_kind(tether_session_info(self->s), path, &kind);
        tether__py_err_take(&e, rc < 0 ? rc : 0);
    }
    tether__py_sess_unlock(self, ts);
    if (e.closed || e.rc) {
        return tether__py_err_raise(&e, "the session");
    }
    return PyLong_FromLong(rc == 1 ? -1 : (long)kind);
}

static PyObject *session_load_module(tpy_session *self, PyObject *args) {
    const char *name;
    if (!PyArg_ParseTuple(args, "s", &name)) {
        return NULL;
    }
    uint64_t module = 0;
    uint32_t nfuncs = 0;
    tpy_err e = {0};
    SESSION_CALL(self, e, tether_session_load_module(self->s, name, &module, &nfuncs));
    if (e.closed || e.rc) {
        return tether__py_err_raise(&e, "the session");
    }
    return Py_BuildValue("(KI)", (unsigned long long)module, (unsigned int)nfuncs);
}

static PyObject *session_get_function(tpy_session *self, PyObject *args) {
    unsigned long long module;
    const char *name;
    if (!PyArg_ParseTuple(args, "Ks", &module, &name)) {
        return NULL;
    }
    tether_remote_func f;
    memset(&f, 0, sizeof f);
    tpy_err e = {0};
    SESSION_CALL(self, e, tether_session_get_function(self->s, module, name, &f));
    if (e.closed || e.rc) {
        return tether__py_err_raise(&e, "the session");
    }
    const char *abi = tether_abi_name(f.abi);
    return Py_BuildValue("(KsiN)", (unsigned long long)f.handle, abi ? abi : "packed",
                         (int)f.num_args, tether__py_str(f.name));
}

/* (handle, abi name, num_args, name) from get_function into f. */
static int parse_func(PyObject *t, tether_remote_func *f) {
    unsigned long long handle;
    const char *abi, *name;
    int num_args;
    memset(f, 0, sizeof *f);
    if (!PyArg_ParseTuple(t, "Ksis;a function is (handle, abi, num_args, name)", &handle, &abi,
                          &num_args, &name)) {
        return -1;
    }
    if (tether_abi_parse(abi, &f->abi)) {
        PyErr_Format(PyExc_ValueError, "unknown ABI '%s'", abi);
        return -1;
    }
    f->handle = handle;
    f->num_args = num_args;
    snprintf(f->name, sizeof f->name, "%s", name);
    return 0;
}

/* A sequence of (type_code, value) into args[]; *n their count. */
static int parse_args(PyObject *seq, tether_remote_arg *args, uint32_t *n) {
    PyObject *fast = PySequence_Fast(seq, "arguments must be a sequence");
    if (!fast) {
        return -1;
    }
    Py_ssize_t count = PySequence_Fast_GET_SIZE(fast);
    if (count > TPY_MAX_ARGS) {
        Py_DECREF(fast);
        PyErr_Format(PyExc_ValueError, "%zd arguments, at most %d", count, TPY_MAX_ARGS);
        return -1;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        int code;
        PyObject *v;
        memset(&args[i], 0, sizeof args[i]);
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fast, i),
                              "iO;an argument is (type_code, value)", &code, &v)) {
            Py_DECREF(fast);
            return -1;
        }
        args[i].type_code = code;
        switch (code) {
        case TETHER_TYPE_DLTENSOR:
        case TETHER_TYPE_HANDLE:
            args[i].v.array = PyLong_AsUnsignedLongLong(v);
            break;
        case TETHER_TYPE_INT:
            args[i].v.i = PyLong_AsLongLong(v);
            break;
        case TETHER_TYPE_UINT:
            args[i].v.u = PyLong_AsUnsignedLongLong(v);
            break;
        case TETHER_TYPE_FLOAT:
            args[i].v.f = PyFloat_AsDouble(v);
            break;
        case TETHER_TYPE_NULL:
            break;
        default:
            Py_DECREF(fast);
            PyErr_Format(PyExc_ValueError, "argument %zd: unsupported type code %d", i, code);
            return -1;
        }
        if (PyErr_Occurred()) {
            Py_DECREF(fast);
            return -1;
        }
    }
    *n = (uint32_t)count;
    Py_DECREF(fast);
    return 0;
}

static PyObject *session_call(tpy_session *self, PyObject *args) {
    PyObject *fobj, *aobj;
    if (!PyArg_ParseTuple(args, "OO", &fobj, &aobj)) {
        return NULL;
    }
    tether_remote_func f;
    tether_remote_arg a[TPY_MAX_ARGS];
    uint32_t n = 0;
    if (parse_func(fobj, &f) || parse_args(aobj, a, &n)) {
        return NULL;
    }
    tether_call_result r;
    memset(&r, 0, sizeof r);
    tpy_err e = {0};
    SESSION_CALL(self, e, tether_session_call(self->s, &f, a, n, &r));
    if (e.closed || e.rc) {
        return tether__py_err_raise(&e, "the session");
    }
    return tether__py_call_result_tuple(&r);
}

static PyObject *session_time(tpy_session *self, PyObject *args) {
    PyObject *fobj, *aobj;
    unsigned int number, repeat, min_repeat_ms, cooldown_ms;
    if (!PyArg_ParseTuple(args, "OOIIII", &fobj, &aobj, &number, &repeat, &min_repeat_ms,
                          &cooldown_ms)) {
        return NULL;
    }
    if (number < 1 || repeat < 1 || repeat > 32) {
        return PyErr_Format(PyExc_ValueError, "number must be >= 1 and repeat in 1..32");
    }
    tether_remote_func f;
    tether_remote_arg a[TPY_MAX_ARGS];
    uint32_t n = 0;
    if (parse_func(fobj, &f) || parse_args(aobj, a, &n)) {
        return NULL;
    }
    tether_time_stats st;
    memset(&st, 0, sizeof st);
    tpy_err e = {0};
    SESSION_CALL(
        self, e,
        tether_session_time(self->s, &f, a, n, number, repeat, min_repeat_ms, cooldown_ms, &st));
    if (e.closed || e.rc) {
        return tether__py_err_raise(&e, "the session");
    }
    return tether__py_time_stats_dict(&st);
}

static PyMethodDef session_methods[] = {
    {"close", (PyCFunction)session_close, METH_NOARGS,
     "close(): ends the session (frees its prepared artifacts first). Idempotent."},
    {"info", (PyCFunction)session_info, METH_NOARGS, "info() -> dict: the device's HELLO."},
    {"fault", (PyCFunction)session_fault, METH_NOARGS,
     "fault() -> str or None: the fault that ended the session."},
    {"reconnect", (PyCFunction)session_reconnect, METH_NOARGS,
     "reconnect(): a new session on the same device; every handle of the old one is gone."},
    {"take_log", (PyCFunction)session_take_log, METH_NOARGS,
     "take_log() -> [(level, text)]: device LOG lines received since the last take_log()."},
    {"alloc", (PyCFunction)session_alloc, METH_VARARGS,
     "alloc(shape, dtype, scope='global', pool=None) -> (handle, nbytes)"},
    {"free", (PyCFunction)session_free, METH_VARARGS, "free(handle)"},
    {"copy_to", (PyCFunction)session_copy_to, METH_VARARGS, "copy_to(handle, offset, buffer)"},
    {"copy_from", (PyCFunction)session_copy_from, METH_VARARGS,
     "copy_from(handle, offset, writable_buffer)"},
    {"upload", (PyCFunction)session_upload, METH_VARARGS,
     "upload(kind, name, data) -> cached: the device had these bytes already"},
    {"upload_file", (PyCFunction)session_upload_file, METH_VARARGS,
     "upload_file(kind, name, path) -> cached"},
    {"module_kind", (PyCFunction)session_module_kind, METH_VARARGS,
     "module_kind(path) -> kind (-1: object code an MCU must link first)"},
    {"load_module", (PyCFunction)session_load_module, METH_VARARGS,
     "load_module(name) -> (handle, num_functions)"},
    {"get_function", (PyCFunction)session_get_function, METH_VARARGS,
     "get_function(module, name) -> (handle, abi, num_args, name)"},
    {"call", (PyCFunction)session_call, METH_VARARGS,
     "call(function, [(type_code, value), ...]) -> (ret, elapsed_ns, stack_bytes, value)"},
    {"time", (PyCFunction)session_time, METH_VARARGS,
     "time(function, args, number, repeat, min_repeat_ms, cooldown_ms) -> dict"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef session_getset[] = {
    {"closed", (getter)session_closed, NULL, "True once the session is closed.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject tether__py_session_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tether._tether.Session",
    .tp_basicsize = sizeof(tpy_session),
    .tp_dealloc = (destructor)session_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Session(url='local:', timeout_ms=0, token=None, tetherd=None, wait_ms=0, "
              "quiet=True): a device session (low level; use tether.Session).",
    .tp_methods = session_methods,
    .tp_getset = session_getset,
    .tp_init = (initproc)session_init,
    .tp_new = session_new,
};
