/*
 * The Python extension's per-node profile (docs/python.md, docs/profile.md): Artifact.profile
 * (tether_artifact_profile on a prepared profiling build) returning the per-node records as
 * dicts, and writing the reports (trace, JSON, SVG) when asked.
 *
 * What must stay true: the artifact is touched only under its session's lock, the GIL released
 * while the device works; an artifact compiled without profile=True raises with the library's
 * message; input and output buffers are checked against the artifact's sizes before the device
 * is contacted.
 */
#include "_tether.h"

#include <string.h>

#include "tether/profile.h"

static PyObject *node_dict(const tether_profile *p, int i) {
    const tether_profile_node *nd = &p->nodes[i];
    PyObject *d = PyDict_New();
    if (!d) {
        return NULL;
    }
    tether__py_set_item(d, "name", tether__py_str(nd->name));
    tether__py_set_item(d, "op", tether__py_str(nd->op));
    tether__py_set_item(d, "kernel", tether__py_str(nd->kernel));
    tether__py_set_item(d, "shapes", tether__py_str(nd->shapes));
    tether__py_set_item(d, "schedule", tether__py_str(nd->schedule));
    tether__py_set_item(d, "median_ns", PyFloat_FromDouble(nd->median_ns));
    tether__py_set_item(d, "share", PyFloat_FromDouble(nd->share));
    tether__py_set_item(d, "macs", PyLong_FromUnsignedLongLong(nd->macs));
    tether__py_set_item(d, "flops", PyLong_FromUnsignedLongLong(nd->flops));
    tether__py_set_item(d, "bytes_in", PyLong_FromUnsignedLongLong(nd->bytes_in));
    tether__py_set_item(d, "bytes_out", PyLong_FromUnsignedLongLong(nd->bytes_out));
    tether__py_set_item(d, "workspace_live", PyLong_FromUnsignedLongLong(nd->workspace_live));
    if (p->stack) {
        tether__py_set_item(d, "stack_bytes", PyLong_FromUnsignedLongLong(nd->stack_bytes));
    } else {
        Py_INCREF(Py_None);
        tether__py_set_item(d, "stack_bytes", Py_None);
    }
    PyObject *ns = PyList_New(p->runs);
    for (int r = 0; ns && r < p->runs; r++) {
        PyList_SET_ITEM(ns, r, PyFloat_FromDouble(p->node_ns[(size_t)r * (size_t)p->nnodes + i]));
    }
    tether__py_set_item(d, "ns", ns);
    return d;
}

/* profile(inputs, outputs, runs, trace, json, svg) -> dict: nodes (list of dicts), runs,
 * sum_ns, call_ns, call_stack_bytes, clock_hz, opencl, stack, target. */
PyObject *tether__py_artifact_profile(tpy_artifact *self, PyObject *args) {
    PyObject *ins, *outs;
    int runs;
    const char *trace = NULL, *json = NULL, *svg = NULL;
    if (!PyArg_ParseTuple(args, "OOi|zzz", &ins, &outs, &runs, &trace, &json, &svg)) {
        return NULL;
    }
    if (!self->sess) {
        return PyErr_Format(PyExc_ValueError, "%s",
                            self->a ? "prepare the artifact on a session first"
                                    : "the artifact was closed");
    }
    if (runs < 1 || runs > 10000) {
        return PyErr_Format(PyExc_ValueError, "runs must be 1..10000");
    }
    PyObject *fin = PySequence_Fast(ins, "inputs must be a sequence of buffers");
    PyObject *fout = fin ? PySequence_Fast(outs, "outputs must be a sequence of buffers") : NULL;
    if (!fout) {
        Py_XDECREF(fin);
        return NULL;
    }
    Py_ssize_t nin = PySequence_Fast_GET_SIZE(fin), nout = PySequence_Fast_GET_SIZE(fout);
    Py_buffer bufs[2 * TETHER_ARTIFACT_MAX_IO];
    const void *inp[TETHER_ARTIFACT_MAX_IO];
    void *outp[TETHER_ARTIFACT_MAX_IO];
    int got = 0;
    PyObject *ret = NULL;
    tether_profile p;
    memset(&p, 0, sizeof p);
    if (nin != self->nin || nout != self->nout || nin > TETHER_ARTIFACT_MAX_IO ||
        nout > TETHER_ARTIFACT_MAX_IO) {
        PyErr_Format(PyExc_ValueError,
                     "the artifact has %d inputs and %d outputs, %zd and %zd given", self->nin,
                     self->nout, nin, nout);
        goto done;
    }
    for (Py_ssize_t i = 0; i < nin + nout; i++) {
        int out = i >= nin;
        PyObject *o =
            out ? PySequence_Fast_GET_ITEM(fout, i - nin) : PySequence_Fast_GET_ITEM(fin, i);
        if (PyObject_GetBuffer(o, &bufs[got],
                               out ? PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS : PyBUF_C_CONTIGUOUS)) {
            goto done;
        }
        got++;
        size_t want = out ? self->out_bytes[i - nin] : self->in_bytes[i];
        if ((size_t)bufs[got - 1].len != want) {
            PyErr_Format(PyExc_ValueError, "%s %zd: %zd bytes, the artifact's is %zu bytes",
                         out ? "output" : "input", out ? i - nin : i, bufs[got - 1].len, want);
            goto done;
        }
        if (out) {
            outp[i - nin] = bufs[got - 1].buf;
        } else {
            inp[i] = bufs[got - 1].buf;
        }
    }
    tpy_err e = {0};
    PyThreadState *ts = tether__py_sess_lock(self->sess);
    if (!self->sess->s || !self->a) {
        e.closed = 1;
    } else {
        int rc = tether_artifact_profile(self->a, inp, outp, runs, &p);
        if (!rc && trace) {
            rc = tether_profile_write_trace(&p, trace);
        }
        if (!rc && json) {
            rc = tether_profile_write_json(&p, json);
        }
        if (!rc && svg) {
            rc = tether_profile_write_svg(&p, svg);
        }
        tether__py_err_take(&e, rc);
    }
    tether__py_sess_unlock(self->sess, ts);
    if (e.closed || e.rc) {
        tether__py_err_raise(&e, "the session");
        goto done;
    }
    ret = PyDict_New();
    PyObject *nodes = ret ? PyList_New(p.nnodes) : NULL;
    for (int i = 0; nodes && i < p.nnodes; i++) {
        PyObject *d = node_dict(&p, i);
        if (!d) {
            Py_CLEAR(nodes);
            break;
        }
        PyList_SET_ITEM(nodes, i, d);
    }
    if (!nodes) {
        Py_CLEAR(ret);
        goto done;
    }
    tether__py_set_item(ret, "nodes", nodes);
    tether__py_set_item(ret, "runs", PyLong_FromLong(p.runs));
    tether__py_set_item(ret, "sum_ns", PyFloat_FromDouble(p.sum_median_ns));
    tether__py_set_item(ret, "call_ns", PyFloat_FromDouble(p.call_median_ns));
    tether__py_set_item(ret, "call_stack_bytes", PyLong_FromUnsignedLongLong(p.call_stack_bytes));
    tether__py_set_item(ret, "clock_hz", PyFloat_FromDouble(p.clock_hz));
    tether__py_set_item(ret, "opencl", PyBool_FromLong(p.opencl));
    tether__py_set_item(ret, "stack", PyBool_FromLong(p.stack));
    tether__py_set_item(ret, "target", tether__py_str(p.target));
done:
    tether_profile_free(&p);
    for (int i = 0; i < got; i++) {
        PyBuffer_Release(&bufs[i]);
    }
    Py_DECREF(fin);
    Py_DECREF(fout);
    return ret;
}
