/*
 * `tether run DIR` / `tether bench DIR` / `tether ab` for an OpenCL artifact (metadata.json
 * "backend": "opencl"): the CLI side of opencl_artifact.c — input files checked against the
 * signature, the session, output files, the printed lines and the --json report (docs/cli.md).
 * `ab` runs OpenCL artifacts through main.c's tether_cli_run_* steps, which use the input check
 * here.
 *
 * What must stay true: inputs are checked before the device is contacted; an output file is
 * written only after the whole run succeeded; every failure is one line "tether <cmd>: <reason>"
 * with exit code 1 (2 for usage); the artifact and the session are released on every path.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "opencl_artifact.h"
#include "tether/crt.h"

static void shape_text(char *buf, size_t n, const int64_t *shape, int nd) {
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < nd && o + 24 < n; i++) {
        o += (size_t)snprintf(buf + o, n - o, "%s%lld", i ? "," : "", (long long)shape[i]);
    }
}

int tether_cli_ocl_read_inputs(const tether_ocl_artifact *a, int nin, const char *const *inputs,
                               tether_npy *in) {
    for (int i = 0; i < nin; i++) {
        const char *name;
        int nd;
        const int64_t *shape;
        tether_ocl_artifact_io(a, 0, i, &name, &nd, &shape);
        if (tether_npy_read(inputs[i], &in[i])) {
            return tether_cli_fail(1, "%s", tether_last_error());
        }
        char have[200], want[200];
        shape_text(have, sizeof have, in[i].shape, in[i].ndim);
        shape_text(want, sizeof want, shape, nd);
        if (!tether_dtype_equal(in[i].dtype, TETHER_FLOAT32)) {
            char dt[TETHER_DTYPE_NAME_MAX];
            tether_dtype_name(in[i].dtype, dt, sizeof dt);
            return tether_cli_fail(1, "%s: dtype %s, but model input '%s' is float32", inputs[i],
                                   dt, name);
        }
        if (strcmp(have, want) != 0 || in[i].ndim != nd) {
            return tether_cli_fail(1, "%s: shape [%s], but model input '%s' is [%s]", inputs[i],
                                   have, name, want);
        }
    }
    return 0;
}

int tether_cli_run_opencl(const char *dir, const tether_cli_ocl_request *q) {
    tether_ocl_artifact *a = NULL;
    tether_session *s = NULL;
    tether_npy in[TETHER_CLI_MAX_IO], out[TETHER_CLI_MAX_IO];
    memset(in, 0, sizeof in);
    memset(out, 0, sizeof out);
    double *step_med = NULL;
    uint64_t *step_ns = NULL;
    cJSON *root = NULL;
    int rc = 1;
    if (tether_ocl_artifact_load(dir, &a)) {
        return tether_cli_fail(1, "%s", tether_last_error());
    }
    int nin = tether_ocl_artifact_num_inputs(a), nout = tether_ocl_artifact_num_outputs(a);
    if (q->nin != nin) {
        rc = tether_cli_fail(2, "the model has %d inputs, %d --in given", nin, q->nin);
        goto out;
    }
    if (nout > TETHER_CLI_MAX_IO || (q->nout && q->nout != nout)) {
        rc = tether_cli_fail(2, "the model has %d outputs, %d --out given", nout, q->nout);
        goto out;
    }
    if (tether_cli_ocl_read_inputs(a, nin, q->inputs, in)) {
        goto out;
    }
    for (int i = 0; i < nout; i++) {
        int nd;
        const int64_t *shape;
        int64_t n = tether_ocl_artifact_io(a, 1, i, NULL, &nd, &shape);
        out[i].dtype = TETHER_FLOAT32;
        out[i].ndim = nd;
        memcpy(out[i].shape, shape, sizeof(int64_t) * (size_t)nd);
        out[i].nbytes = (size_t)n * 4;
        out[i].data = calloc(1, out[i].nbytes ? out[i].nbytes : 1);
        if (!out[i].data) {
            tether_cli_fail(1, "out of memory");
            goto out;
        }
    }
    int nsteps = tether_ocl_artifact_num_steps(a);
    step_med = calloc((size_t)(nsteps ? nsteps : 1), sizeof(double));
    step_ns = calloc((size_t)(nsteps ? nsteps : 1), sizeof(uint64_t));
    if (!step_med || !step_ns) {
        tether_cli_fail(1, "out of memory");
        goto out;
    }
    if (tether_cli_open(&q->dev, &s)) {
        goto out;
    }
    const float *ins[TETHER_CLI_MAX_IO];
    float *outs[TETHER_CLI_MAX_IO];
    for (int i = 0; i < nin; i++) {
        ins[i] = in[i].data;
    }
    for (int i = 0; i < nout; i++) {
        outs[i] = out[i].data;
    }
    uint64_t elapsed = 0;
    if (tether_ocl_artifact_prepare(a, s) ||
        tether_ocl_artifact_run(a, ins, outs, &elapsed, step_ns)) {
        tether_cli_fail(1, "%s", tether_last_error());
        goto out;
    }
    const char *prefix = tether_ocl_artifact_prefix(a);
    tether_time_stats ts;
    memset(&ts, 0, sizeof ts);
    if (q->bench) {
        if (tether_ocl_artifact_time(a, q->number, q->repeat, q->min_repeat_ms, q->cooldown_ms, &ts,
                                     step_med)) {
            tether_cli_fail(1, "%s", tether_last_error());
            goto out;
        }
    }
    if (q->json) {
        root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "command", q->bench ? "bench" : "run");
        cJSON_AddItemToObject(root, "device",
                              tether_cli_device_json(q->dev.url, tether_session_info(s)));
        cJSON_AddStringToObject(root, "module", dir);
        cJSON_AddStringToObject(root, "function", prefix);
        cJSON_AddStringToObject(root, "backend", "opencl");
    }
    if (q->bench) {
        printf("%s (OpenCL, %d kernels): %u repeats x %u calls: mean %.3f us, median %.3f us, "
               "min %.3f us, max %.3f us%s\n",
               prefix, nsteps, ts.repeat, ts.number, ts.mean * 1e6, ts.median * 1e6, ts.min * 1e6,
               ts.max * 1e6, ts.zero_timer ? " (zero timer detected)" : "");
        cJSON *jk = root ? cJSON_CreateArray() : NULL;
        for (int i = 0; i < nsteps; i++) {
            const char *k, *node;
            tether_ocl_artifact_step(a, i, &k, &node);
            printf("  kernel %-32s median %10.3f us  (first call %.3f us)\n", k, step_med[i] * 1e6,
                   (double)step_ns[i] / 1e3);
            if (jk) {
                cJSON *o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "kernel", k);
                cJSON_AddStringToObject(o, "node", node ? node : "");
                cJSON_AddNumberToObject(o, "median_us", step_med[i] * 1e6);
                cJSON_AddNumberToObject(o, "first_call_us", (double)step_ns[i] / 1e3);
                cJSON_AddItemToArray(jk, o);
            }
        }
        printf("time = sum of the kernels' profiled times; first run %.3f us\n",
               (double)elapsed / 1e3);
        if (root) {
            cJSON_AddNumberToObject(root, "first_call_us", (double)elapsed / 1e3);
            cJSON_AddNullToObject(root, "stack_hwm_bytes"); /* kernels: no call stack */
            cJSON_AddNumberToObject(root, "min_repeat_ms", q->min_repeat_ms);
            cJSON_AddNumberToObject(root, "cooldown_ms", q->cooldown_ms);
            tether_cli_time_json(root, &ts);
            cJSON_AddNullToObject(root, "cycles_per_call");
            cJSON_AddItemToObject(root, "kernels", jk);
            rc = tether_cli_write_json(q->json, root);
            root = NULL;
            goto out;
        }
        rc = 0;
        goto out;
    }
    static char defnames[TETHER_CLI_MAX_IO][32];
    cJSON *jouts = root ? cJSON_AddArrayToObject(root, "outputs") : NULL;
    for (int i = 0; i < nout; i++) {
        const char *path = q->nout ? q->outputs[i] : defnames[i];
        if (!q->nout) {
            snprintf(defnames[i], sizeof defnames[i], "out%d.npy", i);
        }
        if (tether_npy_write(path, out[i].dtype, out[i].shape, out[i].ndim, out[i].data)) {
            tether_cli_fail(1, "%s", tether_last_error());
            goto out;
        }
        tether_cli_summary(path, &out[i]);
        if (jouts) {
            const char *name = NULL;
            int nd;
            const int64_t *shape;
            tether_ocl_artifact_io(a, 1, i, &name, &nd, &shape);
            cJSON_AddItemToArray(jouts, tether_cli_array_json(name ? name : "", path, &out[i]));
        }
    }
    printf("%s (OpenCL): %d kernels in %.3f us (sum of the kernels' profiled times)\n", prefix,
           nsteps, (double)elapsed / 1e3);
    rc = 0;
    if (root) {
        cJSON *call = cJSON_AddObjectToObject(root, "call");
        cJSON_AddNumberToObject(call, "return_code", 0);
        cJSON_AddNumberToObject(call, "time_us", (double)elapsed / 1e3);
        cJSON_AddNullToObject(call, "cycles");
        cJSON_AddNullToObject(call, "stack_hwm_bytes"); /* kernels: no call stack */
        cJSON_AddNullToObject(call, "return_value");
        cJSON_AddNumberToObject(call, "kernels", nsteps);
        rc = tether_cli_write_json(q->json, root);
        root = NULL;
    }
out:
    cJSON_Delete(root);
    tether_ocl_artifact_free(a);
    if (s) {
        tether_session_close(s);
    }
    for (int i = 0; i < TETHER_CLI_MAX_IO; i++) {
        tether_npy_free(&in[i]);
        tether_npy_free(&out[i]);
    }
    free(step_med);
    free(step_ns);
    return rc;
}
