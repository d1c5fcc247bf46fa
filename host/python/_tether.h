/*
 * What the files of the _tether extension share (host/python: _tether.c errors, conversions,
 * Artifact and the module; _tether_session.c Session; _tether_compiler.c the compiler's
 * functions): the objects' structs and type objects, the error record taken on the calling
 * thread, the session lock, and the helpers each file uses (tether__py_*, internal to the
 * extension: the module is built with hidden visibility, only PyInit__tether is exported).
 *
 * What must stay true: see _tether.c (no Python-visible crash, the GIL released and the
 * session's lock held around every library call on a session, artifacts on their session's
 * list, library errors as tether.Error, the compiler under one process-wide lock).
 */
#ifndef TETHER_PY_TETHER_H
#define TETHER_PY_TETHER_H

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

/* A status and its message, taken on the thread of the call before the GIL is re-acquired. */
typedef struct tpy_err {
    int rc;
    int closed; /* the session (or artifact) was closed: a ValueError, not a library error */
    char msg[TETHER_ERROR_MSG_MAX];
    char *detail; /* compiler errors: the full text (malloc'd), else NULL */
} tpy_err;

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

extern PyTypeObject tether__py_session_type;
extern PyTypeObject tether__py_artifact_type;

/* ---- helpers (_tether.c) ---- */

/* Records rc and, on an error, its message (on the calling thread). */
void tether__py_err_take(tpy_err *e, int rc);
/* Raises e's error (a closed session or artifact: ValueError "<closed_what> is closed");
 * returns NULL. Frees e->detail. */
PyObject *tether__py_err_raise(tpy_err *e, const char *closed_what);
PyObject *tether__py_str(const char *s);
PyObject *tether__py_shape_tuple(int ndim, const int64_t *shape);
PyObject *tether__py_dtype_str(DLDataType dt);
int tether__py_parse_shape(PyObject *seq, int64_t *shape, int *ndim);
int tether__py_parse_dtype(const char *name, DLDataType *dt);
/* d[key] = v, stealing v (NULL is ignored: the error stays set). */
void tether__py_set_item(PyObject *d, const char *key, PyObject *v);
PyObject *tether__py_time_stats_dict(const tether_time_stats *ts);
PyObject *tether__py_call_result_tuple(const tether_call_result *r);
/* The MCU firmware options of the host library from Python (firmware None or a path, dirs None
 * or a sequence of at most 8 paths); *fast holds the strings until the caller drops it. */
int tether__py_firmware_opts(tether_device_compile_options *o, const char *firmware, PyObject *dirs,
                             const char **dirv, PyObject **fast);

/* ---- the session's lock (_tether_session.c) ---- */

/* Releases the GIL, then takes s's lock; unlock gives both back. */
PyThreadState *tether__py_sess_lock(tpy_session *s);
void tether__py_sess_unlock(tpy_session *s, PyThreadState *ts);

/* Runs `call` (a tether_status expression on self->s) with the session locked and the GIL
 * released; the tpy_err e records a closed session or the call's error for tether__py_err_raise. */
#define SESSION_CALL(self, e, call)                                                                \
    do {                                                                                           \
        PyThreadState *ts_ = tether__py_sess_lock(self);                                           \
        if (!(self)->s) {                                                                          \
            (e).closed = 1;                                                                        \
        } else {                                                                                   \
            tether__py_err_take(&(e), (call));                                                     \
        }                                                                                          \
        tether__py_sess_unlock(self, ts_);                                                         \
    } while (0)

/* ---- the compiler (_tether_compiler.c, with TETHER_HAVE_COMPILER) ---- */

/* Allocates the compiler's process-wide lock (PyInit); 0 or -1 with MemoryError. */
/* _tether_profile.c: Artifact.profile (tether/profile.h). */
PyObject *tether__py_artifact_profile(tpy_artifact *self, PyObject *args);

int tether__py_compiler_init(void);
PyObject *tether__py_compile(PyObject *self, PyObject *args, PyObject *kw);
PyObject *tether__py_model_signature(PyObject *self, PyObject *args, PyObject *kw);
PyObject *tether__py_interpret(PyObject *self, PyObject *args, PyObject *kw);
PyObject *tether__py_targets(PyObject *self, PyObject *unused);

#endif
