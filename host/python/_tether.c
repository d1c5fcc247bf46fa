/*
 * _tether: the CPython extension under the `tether` Python package (host/python/tether/,
 * docs/python.md). A thin layer over the host library (tether/host.h, tether/artifact.h,
 * tether/npy.h, tether/stats.h) and, when built with it, the compiler (tether/compiler.h, the ONNX
 * front end): sessions, uploads, remote arrays, calls and TIME, artifacts, compiling a model and
 * the reference interpreter. Arrays cross this layer as plain buffers (the buffer protocol) and
 * dtype names; numpy conversion and every friendly check live in the Python package.
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
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tether/artifact.h"
#include "tether/crt.h"
#include "tether/host.h"
#include "tether/npy.h"
#include "tether/stats.h"

#ifdef TETHER_HAVE_COMPILER
#include "tether/compiler.h"
#endif
#include "tether/device_compile.h" /* compiling for a session's device, the MCU link */
#ifdef TETHER_HAVE_ONNX
#include "tether/onnx.h"
#endif

#define TPY_MAX_ARGS   64 /* the packed ABI's limit (docs/abi.md) */
#define TPY_MAX_VALUES 64 /* model inputs given to a compile */
#define TPY_LOG_LINES  64 /* device LOG lines kept until take_log() */
#define TPY_LOG_TEXT   256

static PyObject *g_error; /* tether.Error */

/* ---- errors ---------------------------------------------------------------------------------- */

/* A status and its message, taken on the thread of the call before the GIL is re-acquired. */
typedef struct tpy_err {
    int rc;
    int closed; /* the session (or artifact) was closed: a ValueError, not a library error */
    char msg[TETHER_ERROR_MSG_MAX];
    char *detail; /* compiler errors: the full text (malloc'd), else NULL */
} tpy_err;

static void err_take(tpy_err *e, int rc) {
    e->rc = rc;
    if (rc)
        snprintf(e->msg, sizeof e->msg, "%s", tether_last_error());
}

static PyObject *str_of(const char *s) {
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
}

/* Raises tether.Error(message) with .status (the negative tether_status) and .status_name. */
static PyObject *raise_status(int rc, const char *msg) {
    PyObject *text = str_of(msg && *msg ? msg : tether_status_name(rc));
    if (!text)
        return NULL;
    PyObject *exc = PyObject_CallOneArg(g_error, text);
    Py_DECREF(text);
    if (!exc)
        return NULL;
    PyObject *st = PyLong_FromLong(rc), *name = str_of(tether_status_name(rc));
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

static PyObject *err_raise(tpy_err *e, const char *closed_what) {
    PyObject *r;
    if (PyErr_CheckSignals() < 0) /* Ctrl-C during the request: KeyboardInterrupt wins */
        r = NULL;
    else if (e->closed)
        r = PyErr_Format(PyExc_ValueError, "%s is closed", closed_what);
    else
        r = raise_status(e->rc, e->detail ? e->detail : e->msg);
    free(e->detail);
    e->detail = NULL;
    return r;
}

/* ---- small conversions ----------------------------------------------------------------------- */

static PyObject *shape_tuple(int ndim, const int64_t *shape) {
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

static PyObject *dtype_str(DLDataType dt) {
    char name[TETHER_DTYPE_NAME_MAX];
    if (tether_dtype_name(dt, name, sizeof name))
        snprintf(name, sizeof name, "code%u_bits%u", (unsigned)dt.code, (unsigned)dt.bits);
    return str_of(name);
}

/* A sequence of non-negative ints into shape[]; *ndim its length. */
static int parse_shape(PyObject *seq, int64_t *shape, int *ndim) {
    PyObject *fast = PySequence_Fast(seq, "shape must be a sequence of ints");
    if (!fast)
        return -1;
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

static int parse_dtype(const char *name, DLDataType *dt) {
    if (tether_dtype_parse(name, dt)) {
        PyErr_Format(PyExc_ValueError, "unknown dtype '%s'", name);
        return -1;
    }
    return 0;
}

static void set_item(PyObject *d, const char *key, PyObject *v) {
    if (v) {
        PyDict_SetItemString(d, key, v);
        Py_DECREF(v);
    }
}

static PyObject *time_stats_dict(const tether_time_stats *ts) {
    PyObject *d = PyDict_New();
    if (!d)
        return NULL;
    PyObject *secs = PyList_New(0);
    for (uint32_t i = 0; secs && i < ts->repeat && i < 32; i++) {
        PyObject *v = PyFloat_FromDouble(ts->seconds[i]);
        if (v) {
            PyList_Append(secs, v);
            Py_DECREF(v);
        }
    }
    set_item(d, "seconds", secs);
    set_item(d, "mean", PyFloat_FromDouble(ts->mean));
    set_item(d, "median", PyFloat_FromDouble(ts->median));
    set_item(d, "min", PyFloat_FromDouble(ts->min));
    set_item(d, "max", PyFloat_FromDouble(ts->max));
    set_item(d, "number", PyLong_FromUnsignedLong(ts->number));
    set_item(d, "repeat", PyLong_FromUnsignedLong(ts->repeat));
    set_item(d, "zero_timer", PyBool_FromLong(ts->zero_timer));
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

static PyObject *call_result_tuple(const tether_call_result *r) {
    PyObject *val = remote_value(&r->ret_value);
    if (!val)
        return NULL;
    return Py_BuildValue("(iKKN)", (int)r->ret, (unsigned long long)r->elapsed_ns,
                         (unsigned long long)r->stack_bytes, val);
}

/* ---- Session --------------------------------------------------------------------------------- */

typedef struct tpy_artifact tpy_artifact;

typedef struct tpy_session {
    PyObject_HEAD tether_session *s; /* NULL once closed; read and written under lock */
    PyThread_type_lock lock;         /* held around every library call on s */
    int is_open;                     /* s != NULL, as seen with the GIL (for .closed) */
    tpy_artifact *arts;              /* artifacts prepared on s (under lock) */
    /* device LOG lines (under lock: the library delivers them inside a request) */
    int log_level[TPY_LOG_LINES];
    char log_text[TPY_LOG_LINES][TPY_LOG_TEXT];
    int log_head, log_count;
    unsigned long dropped_logs;
} tpy_session;

struct tpy_artifact {
    PyObject_HEAD tether_artifact *a; /* NULL once freed */
    tpy_session *sess;         /* strong reference from prepare on; a is then read under its lock */
    tpy_artifact *prev, *next; /* on sess->arts while attached */
    int attached;
    int prepared;
    /* cached at open: what run() checks without touching a */
    int nin, nout, nkernels;
    size_t in_bytes[TETHER_ARTIFACT_MAX_IO], out_bytes[TETHER_ARTIFACT_MAX_IO];
    size_t *ocl_in_bytes, *ocl_out_bytes; /* OpenCL artifacts may have more: malloc'd */
};

static PyTypeObject tpy_session_type;
static PyTypeObject tpy_artifact_type;

static PyThreadState *sess_lock(tpy_session *s) {
    PyThreadState *ts = PyEval_SaveThread();
    PyThread_acquire_lock(s->lock, WAIT_LOCK);
    return ts;
}

static void sess_unlock(tpy_session *s, PyThreadState *ts) {
    PyThread_release_lock(s->lock);
    PyEval_RestoreThread(ts);
}

/* Runs `call` (a tether_status expression on self->s) with the session locked and the GIL
 * released; the tpy_err e records a closed session or the call's error for err_raise. */
#define SESSION_CALL(self, e, call)                                                                \
    do {                                                                                           \
        PyThreadState *ts_ = sess_lock(self);                                                      \
        if (!(self)->s)                                                                            \
            (e).closed = 1;                                                                        \
        else                                                                                       \
            err_take(&(e), (call));                                                                \
        sess_unlock(self, ts_);                                                                    \
    } while (0)

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
    if (!self)
        return NULL;
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
                                     &tetherd, &wait_ms, &quiet))
        return -1;
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
    PyThreadState *ts = sess_lock(self);
    err_take(&e, tether_session_open(&s, url, &o));
    self->s = s;
    sess_unlock(self, ts);
    PyBuffer_Release(&token);
    if (e.rc) {
        err_raise(&e, "the session");
        return -1;
    }
    self->is_open = 1;
    return 0;
}

static void session_close_now(tpy_session *self) {
    if (!self->lock)
        return;
    PyThreadState *ts = sess_lock(self);
    detach_artifacts_locked(self);
    tether_session_close(self->s);
    self->s = NULL;
    sess_unlock(self, ts);
    self->is_open = 0;
}

static void session_dealloc(tpy_session *self) {
    session_close_now(self);
    if (self->lock)
        PyThread_free_lock(self->lock);
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
    PyThreadState *ts = sess_lock(self);
    if (self->s)
        d = *tether_session_info(self->s);
    else
        e.closed = 1;
    sess_unlock(self, ts);
    if (e.closed)
        return err_raise(&e, "the session");
    PyObject *o = PyDict_New();
    if (!o)
        return NULL;
    set_item(o, "protocol", PyLong_FromUnsignedLong(d.version));
    set_item(o, "board", d.board[0] ? str_of(d.board) : Py_NewRef(Py_None));
    set_item(o, "boot_count",
             d.board[0] ? PyLong_FromUnsignedLong(d.boot_count) : Py_NewRef(Py_None));
    set_item(o, "triple", str_of(d.triple));
    set_item(o, "arch", str_of(d.arch));
    set_item(o, "endianness", str_of(d.little_endian ? "little" : "big"));
    set_item(o, "pointer_bits", PyLong_FromUnsignedLong(d.pointer_bits));
    set_item(o, "max_frame_bytes", PyLong_FromUnsignedLong(d.max_frame));
    set_item(o, "window", PyLong_FromUnsignedLong(d.window));
    set_item(o, "clock", str_of(d.clock_hz ? "device timer" : "nanoseconds"));
    set_item(o, "clock_rate_hz",
             d.clock_hz ? PyLong_FromUnsignedLongLong(d.clock_hz) : Py_NewRef(Py_None));
    PyObject *scopes = PyList_New(0);
    for (int k = 0; scopes && k < TETHER_SCOPE_COUNT; k++)
        if (d.scopes & (1u << k)) {
            PyObject *n = str_of(tether_scope_name((tether_scope)k));
            if (n) {
                PyList_Append(scopes, n);
                Py_DECREF(n);
            }
        }
    set_item(o, "scopes", scopes);
    PyObject *pools = PyDict_New();
    for (uint32_t k = 0; pools && k < d.num_pools && k < 8; k++) {
        PyObject *sz =
            d.pool_sizes[k] ? PyLong_FromUnsignedLongLong(d.pool_sizes[k]) : Py_NewRef(Py_None);
        if (sz) {
            PyDict_SetItemString(pools, d.pools[k], sz);
            Py_DECREF(sz);
        }
    }
    set_item(o, "pools", pools);
    set_item(o, "opencl", PyBool_FromLong(d.opencl));
    set_item(o, "image_max_width", PyLong_FromUnsignedLong(d.image_max_width));
    set_item(o, "image_max_height", PyLong_FromUnsignedLong(d.image_max_height));
    set_item(o, "ram_bytes",
             d.ram_size ? PyLong_FromUnsignedLongLong(d.ram_size) : Py_NewRef(Py_None));
    set_item(o, "array_heap_bytes",
             d.heap_size ? PyLong_FromUnsignedLongLong(d.heap_size) : Py_NewRef(Py_None));
    set_item(o, "call_stack_bytes",
             d.stack_size ? PyLong_FromUnsignedLongLong(d.stack_size) : Py_NewRef(Py_None));
    set_item(o, "load_address",
             d.load_size ? PyLong_FromUnsignedLongLong(d.load_addr) : Py_NewRef(Py_None));
    set_item(o, "load_size_bytes",
             d.load_size ? PyLong_FromUnsignedLongLong(d.load_size) : Py_NewRef(Py_None));
    set_item(o, "exports_id",
             d.load_size ? PyLong_FromUnsignedLong(d.exports_id) : Py_NewRef(Py_None));
    set_item(o, "auth_required", PyBool_FromLong(d.auth_required));
    set_item(o, "cpu", str_of(d.cpu));
    set_item(o, "cpu_features", str_of(d.cpu_features));
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
    PyThreadState *ts = sess_lock(self);
    const char *f = self->s ? tether_session_fault(self->s) : NULL;
    if (f) {
        has = 1;
        snprintf(fault, sizeof fault, "%s", f);
    }
    sess_unlock(self, ts);
    if (!has)
        Py_RETURN_NONE;
    return str_of(fault);
}

static PyObject *session_reconnect(tpy_session *self, PyObject *unused) {
    (void)unused;
    tpy_err e = {0};
    PyThreadState *ts = sess_lock(self);
    if (!self->s) {
        e.closed = 1;
    } else {
        detach_artifacts_locked(self); /* their arrays belong to the old session */
        err_take(&e, tether_session_reconnect(self->s));
    }
    sess_unlock(self, ts);
    if (e.closed || e.rc)
        return err_raise(&e, "the session");
    Py_RETURN_NONE;
}

static PyObject *session_take_log(tpy_session *self, PyObject *unused) {
    (void)unused;
    int levels[TPY_LOG_LINES];
    char(*texts)[TPY_LOG_TEXT] = malloc(sizeof(char[TPY_LOG_LINES][TPY_LOG_TEXT]));
    if (!texts)
        return PyErr_NoMemory();
    int n;
    PyThreadState *ts = sess_lock(self);
    n = self->log_count;
    for (int i = 0; i < n; i++) {
        int k = (self->log_head + i) % TPY_LOG_LINES;
        levels[i] = self->log_level[k];
        memcpy(texts[i], self->log_text[k], TPY_LOG_TEXT);
    }
    self->log_count = 0;
    self->log_head = 0;
    sess_unlock(self, ts);
    PyObject *l = PyList_New(0);
    for (int i = 0; l && i < n; i++) {
        PyObject *t = Py_BuildValue("(iN)", levels[i], str_of(texts[i]));
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
    if (!PyArg_ParseTuple(args, "Os|zz", &shape_obj, &dtype_name, &scope_name, &pool))
        return NULL;
    int64_t shape[TETHER_MAX_NDIM];
    int ndim = 0;
    DLDataType dt;
    tether_scope scope;
    if (parse_shape(shape_obj, shape, &ndim) || parse_dtype(dtype_name, &dt))
        return NULL;
    if (tether_scope_parse(scope_name ? scope_name : "global", &scope))
        return PyErr_Format(PyExc_ValueError, "%s", tether_last_error());
    if (pool && tether_pool_name_check(pool))
        return PyErr_Format(PyExc_ValueError, "pool: %s", tether_last_error());
    uint64_t handle = 0, nbytes = 0;
    tpy_err e = {0};
    SESSION_CALL(self, e,
                 tether_session_alloc(self->s, shape, ndim, dt, scope, pool, &handle, &nbytes));
    if (e.closed || e.rc)
        return err_raise(&e, "the session");
    return Py_BuildValue("(KK)", (unsigned long long)handle, (unsigned long long)nbytes);
}

static PyObject *session_free(tpy_session *self, PyObject *args) {
    unsigned long long handle;
    if (!PyArg_ParseTuple(args, "K", &handle))
        return NULL;
    tpy_err e = {0};
    SESSION_CALL(self, e, tether_session_free(self->s, handle));
    if (e.closed || e.rc)
        return err_raise(&e, "the session");
    Py_RETURN_NONE;
}

static PyObject *session_copy_to(tpy_session *self, PyObject *args) {
    unsigned long long handle, offset;
    Py_buffer b;
    if (!PyArg_ParseTuple(args, "KKy*", &handle, &offset, &b))
        return NULL;
    tpy_err e = {0};
    SESSION_CALL(self, e, tether_session_copy_to(self->s, handle, offset, b.buf, (size_t)b.len));
    PyBuffer_Release(&b);
    if (e.closed || e.rc)
        return err_raise(&e, "the session");
    Py_RETURN_NONE;
}

static PyObject *session_copy_from(tpy_session *self, PyObject *args) {
    unsigned long long handle, offset;
    Py_buffer b;
    if (!PyArg_ParseTuple(args, "KKw*", &handle, &offset, &b))
        return NULL;
    tpy_err e = {0};
    SESSION_CALL(self, e, tether_session_copy_from(self->s, handle, offset, b.buf, (size_t)b.len));
    PyBuffer_Release(&b);
    if (e.closed || e.rc)
        return err_raise(&e, "the session");
    Py_RETURN_NONE;
}

static PyObject *session_upload(tpy_session *self, PyObject *args) {
    unsigned int kind;
    const char *name;
    Py_buffer b;
    if (!PyArg_ParseTuple(args, "Isy*", &kind, &name, &b))
        return NULL;
    tpy_err e = {0};
    int cached = 0;
    PyThreadState *ts = sess_lock(self);
    if (!self->s)
        e.closed = 1;
    else
        err_take(&e, tether_session_upload(self->s, kind, name, b.buf, (size_t)b.len));
    if (self->s && !e.rc)
        cached = tether_session_last_upload_cached(self->s);
    sess_unlock(self, ts);
    PyBuffer_Release(&b);
    if (e.closed || e.rc)
        return err_raise(&e, "the session");
    return PyBool_FromLong(cached);
}

static PyObject *session_upload_file(tpy_session *self, PyObject *args) {
    unsigned int kind;
    const char *name, *path;
    if (!PyArg_ParseTuple(args, "Iss", &kind, &name, &path))
        return NULL;
    tpy_err e = {0};
    int cached = 0;
    PyThreadState *ts = sess_lock(self);
    if (!self->s)
        e.closed = 1;
    else
        err_take(&e, tether_session_upload_file(self->s, kind, name, path));
    if (self->s && !e.rc)
        cached = tether_session_last_upload_cached(self->s);
    sess_unlock(self, ts);
    if (e.closed || e.rc)
        return err_raise(&e, "the session");
    return PyBool_FromLong(cached);
}

/* The module kind the device takes for a file (tether_artifact_module_kind): the kind, or -1
 * for object code an MCU needs linked first. */
static PyObject *session_module_kind(tpy_session *self, PyObject *args) {
    const char *path;
    if (!PyArg_ParseTuple(args, "s", &path))
        return NULL;
    uint32_t kind = 0;
    int rc = 0;
    tpy_err e = {0};
    PyThreadState *ts = sess_lock(self);
    if (!self->s) {
        e.closed = 1;
    } else {
        rc = tether_artifact_module_kind(tether_session_info(self->s), path, &kind);
        err_take(&e, rc < 0 ? rc : 0);
    }
    sess_unlock(self, ts);
    if (e.closed || e.rc)
        return err_raise(&e, "the session");
    return PyLong_FromLong(rc == 1 ? -1 : (long)kind);
}

static PyObject *session_load_module(tpy_session *self, PyObject *args) {
    const char *name;
    if (!PyArg_ParseTuple(args, "s", &name))
        return NULL;
    uint64_t module = 0;
    uint32_t nfuncs = 0;
    tpy_err e = {0};
    SESSION_CALL(self, e, tether_session_load_module(self->s, name, &module, &nfuncs));
    if (e.closed || e.rc)
        return err_raise(&e, "the session");
    return Py_BuildValue("(KI)", (unsigned long long)module, (unsigned int)nfuncs);
}

static PyObject *session_get_function(tpy_session *self, PyObject *args) {
    unsigned long long module;
    const char *name;
    if (!PyArg_ParseTuple(args, "Ks", &module, &name))
        return NULL;
    tether_remote_func f;
    memset(&f, 0, sizeof f);
    tpy_err e = {0};
    SESSION_CALL(self, e, tether_session_get_function(self->s, module, name, &f));
    if (e.closed || e.rc)
        return err_raise(&e, "the session");
    const char *abi = tether_abi_name(f.abi);
    return Py_BuildValue("(KsiN)", (unsigned long long)f.handle, abi ? abi : "packed",
                         (int)f.num_args, str_of(f.name));
}

/* (handle, abi name, num_args, name) from get_function into f. */
static int parse_func(PyObject *t, tether_remote_func *f) {
    unsigned long long handle;
    const char *abi, *name;
    int num_args;
    memset(f, 0, sizeof *f);
    if (!PyArg_ParseTuple(t, "Ksis;a function is (handle, abi, num_args, name)", &handle, &abi,
                          &num_args, &name))
        return -1;
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
    if (!fast)
        return -1;
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
    if (!PyArg_ParseTuple(args, "OO", &fobj, &aobj))
        return NULL;
    tether_remote_func f;
    tether_remote_arg a[TPY_MAX_ARGS];
    uint32_t n = 0;
    if (parse_func(fobj, &f) || parse_args(aobj, a, &n))
        return NULL;
    tether_call_result r;
    memset(&r, 0, sizeof r);
    tpy_err e = {0};
    SESSION_CALL(self, e, tether_session_call(self->s, &f, a, n, &r));
    if (e.closed || e.rc)
        return err_raise(&e, "the session");
    return call_result_tuple(&r);
}

static PyObject *session_time(tpy_session *self, PyObject *args) {
    PyObject *fobj, *aobj;
    unsigned int number, repeat, min_repeat_ms, cooldown_ms;
    if (!PyArg_ParseTuple(args, "OOIIII", &fobj, &aobj, &number, &repeat, &min_repeat_ms,
                          &cooldown_ms))
        return NULL;
    if (number < 1 || repeat < 1 || repeat > 32)
        return PyErr_Format(PyExc_ValueError, "number must be >= 1 and repeat in 1..32");
    tether_remote_func f;
    tether_remote_arg a[TPY_MAX_ARGS];
    uint32_t n = 0;
    if (parse_func(fobj, &f) || parse_args(aobj, a, &n))
        return NULL;
    tether_time_stats st;
    memset(&st, 0, sizeof st);
    tpy_err e = {0};
    SESSION_CALL(
        self, e,
        tether_session_time(self->s, &f, a, n, number, repeat, min_repeat_ms, cooldown_ms, &st));
    if (e.closed || e.rc)
        return err_raise(&e, "the session");
    return time_stats_dict(&st);
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

static PyTypeObject tpy_session_type = {
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

/* ---- Artifact -------------------------------------------------------------------------------- */

static size_t art_bytes(const tpy_artifact *self, int output, int i) {
    if (i < TETHER_ARTIFACT_MAX_IO)
        return output ? self->out_bytes[i] : self->in_bytes[i];
    return output ? self->ocl_out_bytes[i] : self->ocl_in_bytes[i];
}

static int artifact_init(tpy_artifact *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"dir", NULL};
    const char *dir;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s", kwlist, &dir))
        return -1;
    if (self->a || self->sess) {
        PyErr_SetString(PyExc_ValueError, "the artifact is open already");
        return -1;
    }
    tether_artifact *a = NULL;
    tpy_err e = {0};
    PyThreadState *ts = PyEval_SaveThread();
    err_take(&e, tether_artifact_open(dir, &a));
    PyEval_RestoreThread(ts);
    if (e.rc) {
        err_raise(&e, "the artifact");
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
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < (k ? self->nout : self->nin); i++) {
            tether_artifact_io io;
            memset(&io, 0, sizeof io);
            tether_artifact_io_of(a, k, i, &io);
            size_t *slot = i < TETHER_ARTIFACT_MAX_IO
                               ? (k ? &self->out_bytes[i] : &self->in_bytes[i])
                               : (k ? &self->ocl_out_bytes[i] : &self->ocl_in_bytes[i]);
            *slot = io.nbytes;
        }
    return 0;
}

/* Frees the artifact (its remote arrays on the session first) and leaves the session's list. */
static void artifact_close_now(tpy_artifact *self) {
    if (self->sess) {
        tpy_session *s = self->sess;
        PyThreadState *ts = sess_lock(s);
        if (self->attached) {
            if (self->prev)
                self->prev->next = self->next;
            else
                s->arts = self->next;
            if (self->next)
                self->next->prev = self->prev;
            self->attached = 0;
            self->next = self->prev = NULL;
        }
        tether_artifact_free(self->a);
        self->a = NULL;
        sess_unlock(s, ts);
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
    if (!self->a || self->sess)
        return PyErr_Format(PyExc_ValueError, "info() is read before prepare()");
    tether_artifact *a = self->a;
    PyObject *d = PyDict_New();
    if (!d)
        return NULL;
    tether_artifact_backend b = tether_artifact_backend_of(a);
    set_item(d, "backend", str_of(b == TETHER_ARTIFACT_OPENCL ? "opencl" : "c"));
    set_item(d, "entry", str_of(tether_artifact_entry(a)));
    set_item(d, "target", str_of(tether_artifact_target(a)));
    set_item(d, "cpu", str_of(tether_artifact_cpu(a)));
    for (int k = 0; k < 2; k++) {
        PyObject *l = PyList_New(0);
        for (int i = 0; l && i < (k ? self->nout : self->nin); i++) {
            tether_artifact_io io;
            if (tether_artifact_io_of(a, k, i, &io))
                continue;
            PyObject *t = Py_BuildValue("(NNNn)", str_of(io.name), dtype_str(io.dtype),
                                        shape_tuple(io.ndim, io.shape), (Py_ssize_t)io.nbytes);
            if (t) {
                PyList_Append(l, t);
                Py_DECREF(t);
            }
        }
        set_item(d, k ? "outputs" : "inputs", l);
    }
    PyObject *kl = PyList_New(0);
    for (int i = 0; kl && i < self->nkernels; i++) {
        const char *kernel = "", *node = "";
        tether_artifact_kernel(a, i, &kernel, &node);
        PyObject *t = Py_BuildValue("(NN)", str_of(kernel ? kernel : ""), str_of(node ? node : ""));
        if (t) {
            PyList_Append(kl, t);
            Py_DECREF(t);
        }
    }
    set_item(d, "kernels", kl);
    if (PyErr_Occurred()) {
        Py_DECREF(d);
        return NULL;
    }
    return d;
}

/* The MCU firmware options of the host library (tether/device_compile.h) from Python: firmware
 * None or a path, dirs None or a sequence of at most 8 paths. *fast holds the strings until the
 * caller drops it. */
static int firmware_opts(tether_device_compile_options *o, const char *firmware, PyObject *dirs,
                         const char **dirv, PyObject **fast) {
    tether_device_compile_options_init(o);
    o->firmware = firmware;
    *fast = NULL;
    if (!dirs || dirs == Py_None)
        return 0;
    *fast = PySequence_Fast(dirs, "firmware_dirs must be a sequence of str");
    if (!*fast)
        return -1;
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
    if (!PyArg_ParseTuple(args, "O!|zO", &tpy_session_type, &sobj, &firmware, &dirs))
        return NULL;
    tether_device_compile_options dco;
    const char *dirv[8];
    PyObject *fast;
    if (firmware_opts(&dco, firmware, dirs, dirv, &fast))
        return NULL;
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
    PyThreadState *ts = sess_lock(s);
    if (!s->s) {
        e.closed = 1;
    } else {
        /* on the list before prepare: a failed prepare may have allocated arrays to free */
        self->next = s->arts;
        self->prev = NULL;
        if (s->arts)
            s->arts->prev = self;
        s->arts = self;
        self->attached = 1;
        /* the device's loader: .o/.a linked for an MCU board (tether/device_compile.h) */
        err_take(&e, tether_device_prepare(self->a, s->s, &dco));
    }
    sess_unlock(s, ts);
    Py_XDECREF(fast);
    if (e.closed || e.rc)
        return err_raise(&e, "the session");
    Py_RETURN_NONE;
}

static PyObject *artifact_run(tpy_artifact *self, PyObject *args) {
    PyObject *ins, *outs;
    if (!PyArg_ParseTuple(args, "OO", &ins, &outs))
        return NULL;
    if (!self->sess)
        return PyErr_Format(PyExc_ValueError, "%s",
                            self->a ? "prepare the artifact on a session first"
                                    : "the artifact was closed");
    PyObject *fin = PySequence_Fast(ins, "inputs must be a sequence of buffers");
    if (!fin)
        return NULL;
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
                               out ? PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS : PyBUF_C_CONTIGUOUS))
            goto done;
        size_t want = art_bytes(self, out, (int)i);
        if ((size_t)bufs[got].len != want) {
            PyErr_Format(PyExc_ValueError, "%s %zd: %zd bytes, the artifact's is %zu bytes",
                         out ? "output" : "input", i, bufs[got].len, want);
            got++;
            goto done;
        }
        if (out)
            outp[i] = bufs[got].buf;
        else
            inp[i] = bufs[got].buf;
    }
    tether_call_result r;
    memset(&r, 0, sizeof r);
    tpy_err e = {0};
    PyThreadState *ts = sess_lock(self->sess);
    if (!self->sess->s || !self->a)
        e.closed = 1;
    else
        err_take(&e, tether_artifact_run(self->a, inp, outp, &r, kernel_ns));
    sess_unlock(self->sess, ts);
    if (e.closed || e.rc) {
        err_raise(&e, "the session");
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
    PyObject *cr = call_result_tuple(&r);
    if (kl && cr)
        ret = Py_BuildValue("(NN)", cr, kl);
    else {
        Py_XDECREF(kl);
        Py_XDECREF(cr);
    }
done:
    for (Py_ssize_t i = 0; bufs && i < got; i++)
        if (bufs[i].obj)
            PyBuffer_Release(&bufs[i]);
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
    if (!PyArg_ParseTuple(args, "IIII", &number, &repeat, &min_repeat_ms, &cooldown_ms))
        return NULL;
    if (number < 1 || repeat < 1 || repeat > 32)
        return PyErr_Format(PyExc_ValueError, "number must be >= 1 and repeat in 1..32");
    if (!self->sess)
        return PyErr_Format(PyExc_ValueError, "%s",
                            self->a ? "prepare the artifact on a session first"
                                    : "the artifact was closed");
    double *kmed = calloc((size_t)self->nkernels + 1, sizeof *kmed);
    if (!kmed)
        return PyErr_NoMemory();
    tether_time_stats st;
    memset(&st, 0, sizeof st);
    tpy_err e = {0};
    PyThreadState *ts = sess_lock(self->sess);
    if (!self->sess->s || !self->a)
        e.closed = 1;
    else
        err_take(&e, tether_artifact_time(self->a, number, repeat, min_repeat_ms, cooldown_ms, &st,
                                          kmed));
    sess_unlock(self->sess, ts);
    if (e.closed || e.rc) {
        free(kmed);
        return err_raise(&e, "the session");
    }
    PyObject *d = time_stats_dict(&st);
    PyObject *kl = d ? PyList_New(0) : NULL;
    for (int i = 0; kl && i < self->nkernels; i++) {
        PyObject *v = PyFloat_FromDouble(kmed[i]);
        if (v) {
            PyList_Append(kl, v);
            Py_DECREF(v);
        }
    }
    free(kmed);
    if (d && kl)
        set_item(d, "kernel_median", kl);
    else
        Py_CLEAR(d);
    return d;
}

static PyMethodDef artifact_methods[] = {
    {"close", (PyCFunction)artifact_close, METH_NOARGS,
     "close(): frees the artifact (and its arrays on the device). Idempotent."},
    {"info", (PyCFunction)artifact_info, METH_NOARGS,
     "info() -> dict: backend, entry, target, cpu, inputs/outputs (name, dtype, shape, nbytes), "
     "kernels. Read before prepare()."},
    {"prepare", (PyCFunction)artifact_prepare, METH_VARARGS,
     "prepare(session, firmware=None, firmware_dirs=None): upload (.o/.a linked for an MCU "
     "board), load, params, arrays. Once."},
    {"run", (PyCFunction)artifact_run, METH_VARARGS,
     "run(inputs, outputs) -> ((ret, elapsed_ns, stack_bytes, value), kernel_ns)"},
    {"time", (PyCFunction)artifact_time, METH_VARARGS,
     "time(number, repeat, min_repeat_ms, cooldown_ms) -> dict"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject tpy_artifact_type = {
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
    if (!PyArg_ParseTuple(args, "s", &path))
        return NULL;
    tether_npy n;
    memset(&n, 0, sizeof n);
    tpy_err e = {0};
    PyThreadState *ts = PyEval_SaveThread();
    err_take(&e, tether_npy_read(path, &n));
    PyEval_RestoreThread(ts);
    if (e.rc)
        return err_raise(&e, "");
    PyObject *r = Py_BuildValue("(NNy#)", dtype_str(n.dtype), shape_tuple(n.ndim, n.shape),
                                (const char *)n.data, (Py_ssize_t)n.nbytes);
    tether_npy_free(&n);
    return r;
}

static PyObject *mod_url_check(PyObject *self, PyObject *args) {
    (void)self;
    const char *url;
    if (!PyArg_ParseTuple(args, "s", &url))
        return NULL;
    if (tether_device_url_check(url))
        return raise_status(tether_last_status(), tether_last_error());
    Py_RETURN_NONE;
}

/* A sequence of floats into a malloc'd array. */
static double *float_list(PyObject *seq, int *n) {
    PyObject *fast = PySequence_Fast(seq, "a sequence of numbers is expected");
    if (!fast)
        return NULL;
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
    if (!PyArg_ParseTuple(args, "O", &seq))
        return NULL;
    int n = 0;
    double *x = float_list(seq, &n);
    if (!x)
        return NULL;
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
    if (!PyArg_ParseTuple(args, "OO", &sa, &sb))
        return NULL;
    int na = 0, nb = 0;
    double *a = float_list(sa, &na);
    if (!a)
        return NULL;
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

/* ---- module functions: the compiler ---------------------------------------------------------- */

#ifdef TETHER_HAVE_COMPILER
static PyThread_type_lock g_compiler_lock;

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
    for (int i = 0; i < o->nbufs; i++)
        if (o->bufs[i].obj)
            PyBuffer_Release(&o->bufs[i]);
    o->nbufs = 0;
    Py_CLEAR(o->names_tuple);
}

/* shapes: None or ["NAME=1x3"]; values: None or [(dtype, shape, buffer) or None] in the model's
 * input order, or in the order of names (None or [str], one per value) when given. */
static int load_opts_parse(load_opts *o, PyObject *shapes, PyObject *values, PyObject *names) {
    memset(o, 0, sizeof *o);
    if (shapes && shapes != Py_None) {
        PyObject *fast = PySequence_Fast(shapes, "input_shapes must be a sequence of str");
        if (!fast)
            return -1;
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
        if (!fast)
            return -1;
        Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
        if (n > TPY_MAX_VALUES) {
            Py_DECREF(fast);
            PyErr_Format(PyExc_ValueError, "more than %d input values", TPY_MAX_VALUES);
            return -1;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *item = PySequence_Fast_GET_ITEM(fast, i);
            tether_model_value *v = &o->values[i];
            if (item == Py_None)
                continue;
            const char *dt;
            PyObject *shape;
            if (!PyArg_ParseTuple(item, "sOy*;an input value is (dtype, shape, buffer)", &dt,
                                  &shape, &o->bufs[o->nbufs])) {
                Py_DECREF(fast);
                load_opts_release(o);
                return -1;
            }
            Py_buffer *b = &o->bufs[o->nbufs++];
            if (parse_dtype(dt, &v->dtype) || parse_shape(shape, v->shape, &v->ndim)) {
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
    for (int i = 0; l && i < o->lo.ninput_values; i++)
        PyList_SET_ITEM(l, i, PyBool_FromLong(o->bound[i]));
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
    err_take(e, rc);
    if (rc) {
        const char *d = tether_error_detail();
        e->detail = strdup(d && *d ? d : e->msg);
    }
}

static PyObject *mod_compile(PyObject *self, PyObject *args, PyObject *kw) {
    (void)self;
    static char *kwlist[] = {
        "model",      "out_dir",     "abi",     "target",          "cpu",           "prefix",
        "opt_level",  "link_params", "backend", "texture_weights", "input_shapes",  "input_values",
        "tuning_log", "input_names", "session", "firmware",        "firmware_dirs", NULL};
    const char *model, *out_dir, *abi = NULL, *target = NULL, *cpu = NULL, *prefix = NULL;
    const char *backend = NULL, *tuning_log = NULL, *firmware = NULL;
    int opt_level = TETHER_OPT_DEFAULT, link_params = 1, texture_weights = 0;
    PyObject *shapes = Py_None, *values = Py_None, *names = Py_None, *sobj = Py_None;
    PyObject *dirs = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "ss|zzzzipzpOOzOOzO", kwlist, &model, &out_dir, &abi,
                                     &target, &cpu, &prefix, &opt_level, &link_params, &backend,
                                     &texture_weights, &shapes, &values, &tuning_log, &names, &sobj,
                                     &firmware, &dirs))
        return NULL;
    if (sobj != Py_None && !PyObject_TypeCheck(sobj, &tpy_session_type))
        return PyErr_Format(PyExc_TypeError, "session must be a _tether.Session");
    tpy_session *sess = sobj != Py_None ? (tpy_session *)sobj : NULL;
    tether_compile_options o;
    tether_compile_options_init(&o);
    if (abi && tether_abi_parse(abi, &o.codegen.abi))
        return PyErr_Format(PyExc_ValueError, "unknown ABI '%s' (packed or unpacked)", abi);
    if (backend && tether_backend_parse(backend, &o.backend))
        return PyErr_Format(PyExc_ValueError, "unknown backend '%s' (c or opencl)", backend);
    if (opt_level != TETHER_OPT_DEFAULT && (opt_level < -1 || opt_level > 3))
        return PyErr_Format(PyExc_ValueError, "opt_level must be 0..3 or 's'");
    if (target) {
        const tether_target *t;
        if (tether_target_find(target, &t))
            return PyErr_Format(PyExc_ValueError, "target: %s", tether_last_error());
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
    load_opts lo;
    if (load_opts_parse(&lo, shapes, values, names))
        return NULL;
    tether_compile_result res;
    memset(&res, 0, sizeof res);
    tpy_err e = {0};
    /* for a session's device: the host library's one call (target, CPU from its HELLO) */
    static tether_device_compile_options dco; /* under the compiler lock */
    const char *dirv[8];
    PyObject *fast = NULL;
    if (sess && firmware_opts(&dco, firmware, dirs, dirv, &fast)) {
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
        if (!target) /* the device's target and CPU (tether_device_compile_resolve) */
            dco.compile.build.target = NULL;
        dco.tuning_log = tuning_log;
        PyThread_acquire_lock(sess->lock, WAIT_LOCK);
        if (!sess->s)
            e.closed = 1;
        else
            err_take_detail(&e,
                            tether_compile_for_device(sess->s, model, out_dir, &dco, &res, NULL));
        PyThread_release_lock(sess->lock);
        o = dco.compile; /* the target and CPU it chose */
    } else {
        if (tuning_log)
            rc = tether_tuning_log_apply(tuning_log, &o, &tlog, &tns);
        if (rc)
            err_take(&e, rc);
        else
            err_take_detail(&e, tether_compile_model(model, out_dir, &o, &res));
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
        return err_raise(&e, "the session");
    }
    PyObject *d = PyDict_New();
    if (!d) {
        Py_XDECREF(bound);
        return NULL;
    }
    set_item(d, "nodes_in", PyLong_FromLong(res.nnodes_in));
    set_item(d, "nodes_out", PyLong_FromLong(res.nnodes_out));
    set_item(d, "workspace_bytes", PyLong_FromLongLong(res.workspace_size));
    set_item(d, "params_bytes", PyLong_FromSize_t(res.params_bytes));
    set_item(d, "codegen_seconds", PyFloat_FromDouble(res.codegen_seconds));
    set_item(d, "built", PyBool_FromLong(res.built));
    set_item(d, "library", str_of(res.build.library));
    set_item(d, "entry", str_of(res.entry));
    set_item(d, "text", PyLong_FromUnsignedLongLong(res.build.sizes.text));
    set_item(d, "data", PyLong_FromUnsignedLongLong(res.build.sizes.data));
    set_item(d, "bss", PyLong_FromUnsignedLongLong(res.build.sizes.bss));
    set_item(d, "code", PyLong_FromUnsignedLongLong(res.build.sizes.code));
    set_item(d, "static_stack",
             res.build.stack.bounded ? PyLong_FromLongLong(res.build.stack.bytes)
                                     : Py_NewRef(Py_None));
    set_item(d, "tunable_kernels", PyLong_FromLong(res.ntunable));
    set_item(d, "tuned_kernels", PyLong_FromLong(res.ntuned));
    set_item(d, "bound", bound);
    set_item(d, "target", str_of(chosen_target));
    set_item(d, "cpu", str_of(chosen_cpu));
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
        PyObject *item = Py_BuildValue("(NNN)", str_of(t->name ? t->name : ""), dtype_str(t->dtype),
                                       shape_tuple(t->ndim, t->shape));
        if (!item || PyList_Append(l, item)) {
            Py_XDECREF(item);
            Py_CLEAR(l);
            break;
        }
        Py_DECREF(item);
    }
    return l;
}

static PyObject *mod_model_signature(PyObject *self, PyObject *args, PyObject *kw) {
    (void)self;
    static char *kwlist[] = {"model", "input_shapes", "input_values", "input_names", NULL};
    const char *model;
    PyObject *shapes = Py_None, *values = Py_None, *names = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s|OOO", kwlist, &model, &shapes, &values, &names))
        return NULL;
    load_opts mine;
    if (load_opts_parse(&mine, shapes, values, names))
        return NULL;
    tether_ir_graph g;
    tpy_err e = {0};
    load_graph(model, &mine, &g, &e);
    PyObject *bound = bound_list(&mine);
    load_opts_release(&mine);
    if (e.rc) {
        Py_XDECREF(bound);
        tether_ir_close(&g);
        return err_raise(&e, "");
    }
    PyObject *r =
        Py_BuildValue("{s:N,s:N,s:N,s:N,s:i}", "name", str_of(g.name ? g.name : ""), "inputs",
                      tensor_list(&g, g.inputs, g.ninputs), "outputs",
                      tensor_list(&g, g.outputs, g.noutputs), "bound", bound, "nodes", g.nnodes);
    tether_ir_close(&g);
    return r;
}

/* The reference interpreter on float32 inputs (after binding): a list of output bytes. */
static PyObject *mod_interpret(PyObject *self, PyObject *args, PyObject *kw) {
    (void)self;
    static char *kwlist[] = {"model",        "inputs",      "input_shapes",
                             "input_values", "input_names", NULL};
    const char *model;
    PyObject *ins, *shapes = Py_None, *values = Py_None, *names = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "sO|OOO", kwlist, &model, &ins, &shapes, &values,
                                     &names))
        return NULL;
    PyObject *fin = PySequence_Fast(ins, "inputs must be a sequence of buffers");
    if (!fin)
        return NULL;
    load_opts mine;
    if (load_opts_parse(&mine, shapes, values, names)) {
        Py_DECREF(fin);
        return NULL;
    }
    PyObject *ret = NULL;
    tether_ir_graph g;
    tpy_err e = {0};
    Py_ssize_t nin = PySequence_Fast_GET_SIZE(fin), got = 0;
    Py_buffer *bufs = NULL;
    const float **inp = NULL;
    float **outp = NULL;
    int nout = 0;
    if (load_graph(model, &mine, &g, &e)) {
        err_raise(&e, "");
        goto done;
    }
    if (nin != g.ninputs) {
        PyErr_Format(PyExc_ValueError, "%s has %d run-time inputs, %zd given", model, g.ninputs,
                     nin);
        goto done;
    }
    for (int i = 0; i < g.ninputs + g.noutputs; i++) {
        const tether_ir_tensor *t =
            &g.tensors[i < g.ninputs ? g.inputs[i] : g.outputs[i - g.ninputs]];
        if (!tether_dtype_equal(t->dtype, TETHER_FLOAT32)) {
            PyErr_Format(PyExc_ValueError,
                         "%s: tensor '%s' is not float32 (the interpreter's only dtype)", model,
                         t->name ? t->name : "");
            goto done;
        }
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
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(fin, got), &bufs[got], PyBUF_C_CONTIGUOUS))
            goto done;
        size_t want = tether_ir_tensor_elements(t) * sizeof(float);
        if ((size_t)bufs[got].len != want) {
            PyErr_Format(PyExc_ValueError, "input '%s': %zd bytes, the model's is %zu bytes",
                         t->name ? t->name : "", bufs[got].len, want);
            got++;
            goto done;
        }
        inp[got] = bufs[got].buf;
    }
    for (; nout < g.noutputs; nout++) {
        size_t n = tether_ir_tensor_elements(&g.tensors[g.outputs[nout]]);
        outp[nout] = calloc(n ? n : 1, sizeof(float));
        if (!outp[nout]) {
            PyErr_NoMemory();
            goto done;
        }
    }
    PyThreadState *ts = compiler_lock();
    err_take_detail(&e, tether_interp_run(&g, inp, outp));
    compiler_unlock(ts);
    if (e.rc) {
        err_raise(&e, "");
        goto done;
    }
    ret = PyList_New(0);
    for (int i = 0; ret && i < g.noutputs; i++) {
        const tether_ir_tensor *t = &g.tensors[g.outputs[i]];
        PyObject *item =
            Py_BuildValue("(NNNy#)", str_of(t->name ? t->name : ""), dtype_str(t->dtype),
                          shape_tuple(t->ndim, t->shape), (const char *)outp[i],
                          (Py_ssize_t)(tether_ir_tensor_elements(t) * sizeof(float)));
        if (!item || PyList_Append(ret, item)) {
            Py_XDECREF(item);
            Py_CLEAR(ret);
            break;
        }
        Py_DECREF(item);
    }
done:
    for (Py_ssize_t i = 0; bufs && i < got; i++)
        if (bufs[i].obj)
            PyBuffer_Release(&bufs[i]);
    for (int i = 0; outp && i < nout; i++)
        free(outp[i]);
    free(bufs);
    free(inp);
    free(outp);
    free(e.detail);
    tether_ir_close(&g);
    load_opts_release(&mine);
    Py_DECREF(fin);
    return ret;
}

static PyObject *mod_targets(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    int n = 0;
    const tether_target *t = tether_targets(&n);
    PyObject *l = PyList_New(0);
    for (int i = 0; l && i < n; i++) {
        PyObject *item =
            Py_BuildValue("{s:N,s:N,s:N,s:N}", "name", str_of(t[i].name), "kind",
                          str_of(t[i].kind == TETHER_TARGET_SHARED ? "shared" : "static"),
                          "description", str_of(t[i].description ? t[i].description : ""),
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
    {"compile", (PyCFunction)(void (*)(void))mod_compile, METH_VARARGS | METH_KEYWORDS,
     "compile(model, out_dir, abi=None, target=None, cpu=None, prefix=None, opt_level=-2, "
     "link_params=True, backend=None, texture_weights=False, input_shapes=None, "
     "input_values=None, tuning_log=None, input_names=None, session=None, firmware=None, "
     "firmware_dirs=None) -> dict (with session: compiled for its device, "
     "tether_compile_for_device)"},
    {"model_signature", (PyCFunction)(void (*)(void))mod_model_signature,
     METH_VARARGS | METH_KEYWORDS,
     "model_signature(model, input_shapes=None, input_values=None, input_names=None) -> dict"},
    {"interpret", (PyCFunction)(void (*)(void))mod_interpret, METH_VARARGS | METH_KEYWORDS,
     "interpret(model, inputs, input_shapes=None, input_values=None, input_names=None) -> "
     "[(name, dtype, shape, bytes)]"},
    {"targets", (PyCFunction)mod_targets, METH_NOARGS, "targets() -> [dict]"},
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
    if (PyType_Ready(&tpy_session_type) < 0 || PyType_Ready(&tpy_artifact_type) < 0)
        return NULL;
#ifdef TETHER_HAVE_COMPILER
    if (!g_compiler_lock && !(g_compiler_lock = PyThread_allocate_lock()))
        return PyErr_NoMemory();
#endif
#ifdef TETHER_HAVE_ONNX
    tether_onnx_register();
    tether_onnx_register_arrays(); /* .pb arrays for read_array */
#endif
    PyObject *m = PyModule_Create(&tether_module);
    if (!m)
        return NULL;
    if (!g_error)
        g_error = PyErr_NewExceptionWithDoc(
            "tether.Error",
            "A failure reported by tether: .status is the negative tether_status, .status_name "
            "its name (TETHER_ERR_IO, ...), str(e) the library's message.",
            PyExc_RuntimeError, NULL);
    if (!g_error || PyModule_AddObjectRef(m, "Error", g_error) ||
        PyModule_AddObjectRef(m, "Session", (PyObject *)&tpy_session_type) ||
        PyModule_AddObjectRef(m, "Artifact", (PyObject *)&tpy_artifact_type)) {
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
