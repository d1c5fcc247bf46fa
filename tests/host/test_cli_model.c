/*
 * test_host_cli (cli_common.h): models through the CLI: a model file compiled and run (options
 * reaching the compile, the device's CPU), run --reference against the device, params blobs and
 * artifacts that cannot run, output files (devices and links written in place, a model linked to
 * /dev/zero refused), --in NAME=FILE and .npz inputs and outputs on a model, an artifact, the
 * reference and ab; model inputs checked before a compile or a device (a device that refuses
 * connections), and an .npz decompression bomb refused under a memory limit.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_common.h"
#include "npz_bomb.h"
#include "tether/compiler.h"
#include "tether/file.h"

#ifdef TETHER_HAVE_COMPILER
/* A model file is compiled through the compiler API and run; the KWS example ends in softmax. */
void test_run_model(void **state) {
    (void)state;
    write_mfcc();
    char p[256];
    const char *o;
    int rc = tether(&o, "run '%s/examples/kws/kws.json' --in mfcc.npy --out probs.npy",
                    TETHER_SOURCE_DIR);
    if (rc) {
        fail_msg("%s", o);
    }
    snprintf(p, sizeof p, "%s/probs.npy", g_dir);
    tether_npy n;
    assert_int_equal(tether_npy_read(p, &n), 0);
    assert_int_equal(n.ndim, 2);
    assert_int_equal(n.shape[1], 12);
    double sum = 0;
    for (int i = 0; i < 12; i++) {
        sum += ((float *)n.data)[i];
    }
    assert_true(sum > 0.999 && sum < 1.001);
    tether_npy_free(&n);
    /* --opt-level and --params reach the compile, as with tether compile: the weights in a blob
     * leave the library's text without them; run and bench alike */
    double text[2];
    const char *params[2] = {"linked", "blob"};
    for (int k = 0; k < 2; k++) {
        rc = tether(&o,
                    "%s '%s/examples/kws/kws.json' --in mfcc.npy --opt-level s --params %s --json "
                    "m.json%s",
                    k ? "bench" : "run", TETHER_SOURCE_DIR, params[k],
                    k ? " --number 1 --repeat 1" : " --out probs2.npy");
        if (rc) {
            fail_msg("%s", o);
        }
        cJSON *j = read_json("m.json");
        const cJSON *c = cJSON_GetObjectItem(j, "compiled");
        assert_string_equal(str(c, "opt_level"), "s");
        assert_string_equal(str(c, "params"), params[k]);
        assert_int_equal((int)num(c, "params_bytes"), 49360);
        text[k] = num(c, "text_bytes");
        cJSON_Delete(j);
    }
    assert_true(text[1] + 40000 < text[0]);
    /* a model is compiled for the device's CPU (HELLO cpu) at the hosted default -O3, unless
     * --mcpu says otherwise; a CPU name that is no -march value is refused */
    if (tether(&o, "info --json")) {
        fail_msg("%s", o);
    }
    cJSON *info = cJSON_Parse(o);
    assert_non_null(info);
    const cJSON *jcpu = cJSON_GetObjectItem(info, "cpu");
    char hello_cpu[64], features[300] = "", dev_cpu[128], dev_flags[256];
    snprintf(hello_cpu, sizeof hello_cpu, "%s", cJSON_IsString(jcpu) ? jcpu->valuestring : "");
    const cJSON *jf;
    cJSON_ArrayForEach(jf, cJSON_GetObjectItem(info, "cpu_features")) {
        size_t l = strlen(features);
        snprintf(features + l, sizeof features - l, " %s", jf->valuestring);
    }
    cJSON_Delete(info);
    /* HELLO's cpu with the int8 dot products its features name (on this machine: none) */
    tether_cpu_for_device(hello_cpu, features, dev_cpu, sizeof dev_cpu);
    assert_int_equal(tether_cpu_flags(NULL, dev_cpu, dev_flags, sizeof dev_flags), 0);
    for (int k = 0; k < 2; k++) {
        if (tether(&o, "run '%s/examples/kws/kws.json' --in mfcc.npy --out p3.npy --json m.json%s",
                   TETHER_SOURCE_DIR, k ? " --mcpu x86-64-v2" : "")) {
            fail_msg("%s", o);
        }
        cJSON *j = read_json("m.json");
        const cJSON *c = cJSON_GetObjectItem(j, "compiled");
        assert_string_equal(str(c, "opt_level"), "3");
        assert_string_equal(str(c, "cpu"), k ? "x86-64-v2" : dev_cpu);
        assert_string_equal(str(c, "cpu_flags"), k ? "-march=x86-64-v2" : dev_flags);
        cJSON_Delete(j);
    }
    assert_int_equal(
        tether(&o, "run '%s/examples/kws/kws.json' --in mfcc.npy --mcpu 'v3;x'", TETHER_SOURCE_DIR),
        1);
    assert_non_null(strstr(o, "cpu 'v3;x' is not a -march/-mcpu value"));
    assert_int_equal(
        tether(&o, "run '%s/examples/kws/kws.json' --in mfcc.npy --opt-level 7", TETHER_SOURCE_DIR),
        2);
    assert_non_null(strstr(o, "--opt-level wants"));
    assert_int_equal(
        tether(&o, "run '%s/examples/kws/kws.json' --in mfcc.npy --params foo", TETHER_SOURCE_DIR),
        2);
    /* a module or an artifact is not compiled: the options are refused */
    assert_int_equal(tether(&o, "run '%s' add_packed --opt-level 1", TESTMOD_PATH), 2);
    assert_non_null(strstr(o, "apply to a MODEL"));
    assert_int_equal(tether(&o,
                            "run '%s/examples/kws/kws.json' --reference --in mfcc.npy "
                            "--params blob",
                            TETHER_SOURCE_DIR),
                     2);
    assert_int_equal(tether(&o, "run '%s/tests/compiler/bad_models/bad_dtype.json' --in mfcc.npy",
                            TETHER_SOURCE_DIR),
                     1);
    assert_non_null(strstr(o, "float33"));
}

/* run --reference (host interpreter) agrees with the compiled model run on the device. */
void test_run_reference(void **state) {
    (void)state;
    int64_t shape[] = {1, 1, 49, 10};
    float x[490];
    for (int i = 0; i < 490; i++) {
        x[i] = (float)((i * 53) % 97) / 50.0f - 1.0f;
    }
    char p[256];
    snprintf(p, sizeof p, "%s/mfcc.npy", g_dir);
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, shape, 4, x), 0);
    const char *o;
    const char *kws = TETHER_SOURCE_DIR "/examples/kws/kws.json";
    if (tether(&o, "run --reference '%s' --in mfcc.npy --out ref.npy", kws)) {
        fail_msg("%s", o);
    }
    assert_non_null(strstr(o, "reference interpreter"));
    if (tether(&o, "run '%s' --in mfcc.npy --out dev.npy", kws)) {
        fail_msg("%s", o);
    }
    tether_npy a = read_npy("ref.npy"), b = read_npy("dev.npy");
    assert_int_equal(a.nbytes, 48);
    assert_int_equal(b.nbytes, 48);
    for (int i = 0; i < 12; i++) {
        assert_float_equal(((float *)a.data)[i], ((float *)b.data)[i], 1e-5);
    }
    tether_npy_free(&a);
    tether_npy_free(&b);
    /* a params blob of the wrong size is refused before the device runs anything (the unpacked
     * ABI could not tell) */
    if (tether(&o, "compile '%s' -o blob --params blob --quiet", kws)) {
        fail_msg("%s", o);
    }
    assert_int_equal(tether(&o, "run blob --in mfcc.npy --out b.npy"), 0);
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && head -c 100 blob/params.bin > blob/p && mv blob/p blob/params.bin", g_dir);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(tether(&o, "run blob --in mfcc.npy --out b2.npy"), 1);
    assert_non_null(
        strstr(o, "params.bin is 100 bytes, but metadata.json says params_bytes 49360"));
    snprintf(p, sizeof p, "%s/b2.npy", g_dir);
    assert_int_not_equal(access(p, F_OK), 0);
    /* an input that is not a regular file */
    assert_int_equal(tether(&o, "run blob --in /dev/zero --out b2.npy"), 1);
    assert_non_null(strstr(o, "not a regular file"));
    /* artifacts this tether cannot run say why */
    if (tether(&o, "compile '%s' -o nobuild --no-build --quiet", kws)) {
        fail_msg("%s", o);
    }
    assert_int_equal(tether(&o, "run nobuild --in mfcc.npy"), 1);
    assert_non_null(strstr(o, "compiled with --no-build"));
    snprintf(cmd, sizeof cmd,
             "cd '%s' && sed -i 's/\"version\":\t1,/\"version\":\t99,/' blob/metadata.json", g_dir);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(tether(&o, "run blob --in mfcc.npy"), 1);
    assert_non_null(strstr(o, "format version 99"));
    /* wrong input shape: named, nothing written */
    snprintf(p, sizeof p, "%s/mfcc.npy", g_dir);
    int64_t bad[] = {1, 49, 10};
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, bad, 3, x), 0);
    assert_int_equal(tether(&o, "run --reference '%s' --in mfcc.npy --out ref2.npy", kws), 1);
    assert_non_null(strstr(o, "model input 'mfcc'"));
    snprintf(p, sizeof p, "%s/ref2.npy", g_dir);
    assert_int_not_equal(access(p, F_OK), 0);
    assert_int_equal(tether(&o, "run --reference '%s' --in mfcc.npy", g_dir), 2);
}

/* Output files: a device (/dev/null, even as root) and a symbolic link are written in place,
 * never replaced; a regular file is replaced; an input or model that is a link to /dev/zero is
 * refused instead of read until memory runs out. */
void test_output_files(void **state) {
    (void)state;
    write_f32("a.npy", 16, 0);
    write_f32("b.npy", 16, 100);
    const char *o;
    struct stat before, after;
    assert_int_equal(stat("/dev/null", &before), 0);
    int rc = tether(&o, "run '%s' add_packed --in a.npy --in b.npy --out /dev/null", TESTMOD_PATH);
    if (rc) {
        fail_msg("%s", o);
    }
    assert_int_equal(lstat("/dev/null", &after), 0);
    assert_true(S_ISCHR(after.st_mode));
    assert_int_equal(before.st_rdev, after.st_rdev);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cd '%s' && rm -f real.npy link.npy && ln -s real.npy link.npy",
             g_dir);
    assert_int_equal(system(cmd), 0);
    rc = tether(&o, "run '%s' add_packed --in a.npy --in b.npy --out link.npy", TESTMOD_PATH);
    if (rc) {
        fail_msg("%s", o);
    }
    char p[256];
    snprintf(p, sizeof p, "%s/link.npy", g_dir);
    assert_int_equal(lstat(p, &after), 0);
    assert_true(S_ISLNK(after.st_mode));
    check_sum("real.npy");
    /* a model symlinked to /dev/zero: refused at once with the reason */
    snprintf(cmd, sizeof cmd, "cd '%s' && rm -f zero.json && ln -s /dev/zero zero.json", g_dir);
    assert_int_equal(system(cmd), 0);
    assert_int_not_equal(tether(&o, "compile zero.json -o z --quiet"), 0);
    assert_non_null(strstr(o, "not a regular file"));
    snprintf(p, sizeof p, "%s/z", g_dir);
    assert_int_not_equal(access(p, F_OK), 0); /* nothing left behind */
}

static float g_a[6] = {0, 1, 2, 3, 4, 5}, g_b[6] = {2, 2, 2, -1, 0.5f, 3};

/* Checks array `name` of the archive (or the .npy file when name is NULL) against s or p. */
static void check_two_io(const char *file, const char *name, int product) {
    char p[256];
    snprintf(p, sizeof p, "%s/%s", g_dir, file);
    tether_npy n;
    int rc = name ? tether_npz_read_member(p, name, &n) : tether_npy_read(p, &n);
    if (rc) {
        fail_msg("%s", tether_last_error());
    }
    assert_int_equal(n.nbytes, 24);
    assert_int_equal(n.shape[0], 2);
    for (int i = 0; i < 6; i++) {
        assert_true(((float *)n.data)[i] == (product ? g_a[i] * g_b[i] : g_a[i] + g_b[i]));
    }
    tether_npy_free(&n);
}

/* --in NAME=FILE, .npz inputs and outputs (tvmc's habits) on a model, an artifact, the reference
 * interpreter and ab; every refusal names the problem and writes nothing. */
void test_named_and_npz(void **state) {
    (void)state;
    write_two_io_model();
    int64_t shape[2] = {2, 3};
    char p[256];
    snprintf(p, sizeof p, "%s/a.npy", g_dir);
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, shape, 2, g_a), 0);
    snprintf(p, sizeof p, "%s/b.npy", g_dir);
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, shape, 2, g_b), 0);
    /* an archive in the other order than the model's inputs */
    tether_npy arrays[2] = {{TETHER_FLOAT32, 2, {2, 3}, g_b, 24},
                            {TETHER_FLOAT32, 2, {2, 3}, g_a, 24}};
    const char *names[2] = {"b", "a"};
    snprintf(p, sizeof p, "%s/in.npz", g_dir);
    assert_int_equal(tether_npz_write(p, 2, names, arrays), 0);
    const char *o;
    int rc = tether(&o, "run two.json --in in.npz --out o.npz");
    if (rc) {
        fail_msg("%s", o);
    }
    assert_non_null(strstr(o, "o.npz:s: float32 [2, 3]"));
    assert_non_null(strstr(o, "\nwrote o.npz\n"));
    check_two_io("o.npz", "s", 0);
    check_two_io("o.npz", "p", 1);
    /* by name in any order; only the named output is written */
    rc = tether(&o, "run two.json --in b=b.npy --in a=a.npy --out p=p.npy");
    if (rc) {
        fail_msg("%s", o);
    }
    check_two_io("p.npy", NULL, 1);
    assert_false(exists("out0.npy"));
    assert_non_null(strstr(o, "wrote p.npy\n"));
    /* the reference interpreter binds the same way */
    rc = tether(&o, "run --reference two.json --in in.npz --out ref.npz");
    if (rc) {
        fail_msg("%s", o);
    }
    check_two_io("ref.npz", "s", 0);
    check_two_io("ref.npz", "p", 1);
    /* an artifact: NAME=ARCHIVE takes the archive's array NAME; --json names the archive */
    if (tether(&o, "compile two.json -o art --quiet")) {
        fail_msg("%s", o);
    }
    rc = tether(&o, "run art --in b=in.npz --in a=in.npz --out art.npz --json run.json");
    if (rc) {
        fail_msg("%s", o);
    }
    check_two_io("art.npz", "p", 1);
    assert_non_null(strstr(o, "wrote art.npz, run.json\n"));
    cJSON *j = read_json("run.json");
    const cJSON *outs = cJSON_GetObjectItem(j, "outputs");
    assert_int_equal(cJSON_GetArraySize(outs), 2);
    assert_string_equal(str(cJSON_GetArrayItem(outs, 1), "name"), "p");
    assert_string_equal(str(cJSON_GetArrayItem(outs, 1), "file"), "art.npz");
    cJSON_Delete(j);
    rc = tether(&o, "bench art --in in.npz --number 2 --repeat 2 --out bench.npz");
    if (rc) {
        fail_msg("%s", o);
    }
    check_two_io("bench.npz", "s", 0);
    rc = tether(&o, "ab two.json --in in.npz --number 2 --repeat 1");
    if (rc) {
        fail_msg("%s", o);
    }
    assert_non_null(strstr(o, "outputs equal the interpreter"));
    /* refusals (usage errors are found before any device is contacted) */
    assert_int_equal(tether(&o, "run two.json --device tcp://127.0.0.1:1 --in b=b.npy --in a.npy"),
                     2);
    assert_non_null(strstr(o, "some arguments are named"));
    assert_int_equal(tether(&o, "run two.json --device tcp://127.0.0.1:1 --in a=a.npy --in "
                                "a=b.npy"),
                     2);
    assert_non_null(strstr(o, "input 'a' is given twice (a.npy and b.npy)"));
    assert_int_equal(tether(&o, "run art --in c=b.npy --in a=a.npy --out x.npz"), 2);
    assert_non_null(strstr(o, "the model has no input 'c' (its inputs: a, b)"));
    assert_int_equal(tether(&o, "run art --in a=a.npy --out x.npz"), 2);
    assert_non_null(strstr(o, "input 'b' has no --in (give --in b=FILE)"));
    assert_int_equal(tether(&o, "run art --in in.npz --out q=q.npy"), 2);
    assert_non_null(strstr(o, "no output 'q' (its outputs: s, p)"));
    assert_int_equal(tether(&o, "run art --in c=in.npz"), 2);
    assert_non_null(strstr(o, "in.npz has 2 arrays and none is named 'c'"));
    assert_int_equal(tether(&o, "run art --in in.npz --out s=x.npz"), 2);
    assert_non_null(strstr(o, "an .npz output collects every output by name"));
    assert_int_equal(tether(&o, "run art --in in.npz --out x.npz --out y.npy"), 2);
    assert_non_null(strstr(o, "--out x.npz collects every output"));
    assert_int_equal(tether(&o, "run '%s' add_packed --in in.npz --out c.npy", TESTMOD_PATH), 2);
    assert_non_null(strstr(o, "a module function's arguments are positional"));
    assert_int_equal(tether(&o, "run art --in a.npy --in b.npy --out two.json.npz.bad/x.npz"), 1);
    assert_int_equal(tether(&o, "run art --in missing.npz"), 1);
    assert_non_null(strstr(o, "missing.npz"));
    assert_int_equal(tether(&o, "run art --in a.npy --in in.npz"), 2); /* mixed, expanded */
    assert_false(exists("x.npz"));
    assert_false(exists("q.npy"));
    assert_false(exists("c.npy"));
    /* names as ONNX and TensorFlow make them: ':' and '/' inside, in archives and NAME=FILE */
    snprintf(p, sizeof p, "%s/odd.json", g_dir);
    const char *odd =
        "{\"format\": \"tether-model\", \"version\": 1, \"tensors\": [{\"name\": \"x:0\", "
        "\"shape\": [2, 3]}, {\"name\": \"onnx::b/1\", \"shape\": [2, 3]}], \"inputs\": "
        "[\"x:0\", \"onnx::b/1\"], \"outputs\": [\"y/0\"], \"nodes\": [{\"name\": \"add\", "
        "\"op\": \"add\", \"inputs\": [\"x:0\", \"onnx::b/1\"], \"outputs\": [\"y/0\"]}]}\n";
    assert_int_equal(tether_file_write(p, odd, strlen(odd)), 0);
    const char *odd_names[2] = {"onnx::b/1", "x:0"};
    snprintf(p, sizeof p, "%s/odd.npz", g_dir);
    assert_int_equal(tether_npz_write(p, 2, odd_names, arrays), 0); /* b = g_b, x = g_a */
    rc = tether(&o, "run odd.json --in odd.npz --out odd-out.npz");
    if (rc) {
        fail_msg("%s", o);
    }
    check_two_io("odd-out.npz", "y/0", 0);
    rc = tether(&o, "run odd.json --in onnx::b/1=b.npy --in x:0=a.npy --out y/0=odd-y.npy");
    if (rc) {
        fail_msg("%s", o);
    }
    check_two_io("odd-y.npy", NULL, 0);
    /* a repeated run does not upload the library again (tetherd's upload cache) */
    char cache[256];
    snprintf(cache, sizeof cache, "%s/cache", g_dir);
    setenv("TETHER_UPLOAD_CACHE", cache, 1);
    for (int k = 0; k < 2; k++) {
        rc = tether(&o, "run art --in in.npz --out o.npz --json c%d.json", k);
        if (rc) {
            fail_msg("%s", o);
        }
        char name[16];
        snprintf(name, sizeof name, "c%d.json", k);
        cJSON *cj = read_json(name);
        assert_int_equal(cJSON_IsTrue(cJSON_GetObjectItem(cj, "upload_cached")), k == 1);
        cJSON_Delete(cj);
    }
    rc = tether(&o, "upload art/libtether_model.so");
    unsetenv("TETHER_UPLOAD_CACHE");
    assert_int_equal(rc, 0);
    assert_non_null(strstr(o, "(the device had these bytes: none sent)"));
}

/* A TCP port on 127.0.0.1 that refuses connections: bound, not listening, held (so nobody else
 * takes it) until the caller closes *fd. */
static int refused_port(int *fd) {
    *fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t n = sizeof a;
    assert_true(*fd >= 0);
    assert_int_equal(bind(*fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(*fd, (struct sockaddr *)&a, &n), 0);
    return ntohs(a.sin_port);
}

/* Entries of a directory (without . and ..). */
static int dir_entries(const char *path) {
    DIR *d = opendir(path);
    int n = 0;
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));) {
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    }
    closedir(d);
    return n;
}

/* run/bench/ab MODEL check every --in file against the model (exists, parses, dtype and shape of
 * the input it is for, the count) before anything is compiled or a device contacted: with a
 * device nobody listens on, the error is the input's, and no temporary directory (where a model
 * is compiled) is made. */
void test_inputs_before_device(void **state) {
    (void)state;
    write_two_io_model();
    write_f32("short.npy", 3, 0.0f);
    int64_t shape[2] = {2, 3};
    char p[256];
    snprintf(p, sizeof p, "%s/a.npy", g_dir);
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, shape, 2, g_a), 0);
    snprintf(p, sizeof p, "%s/b.npy", g_dir);
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, shape, 2, g_b), 0);
    snprintf(p, sizeof p, "%s/bad.npy", g_dir);
    assert_int_equal(tether_file_write(p, "not an array", 12), 0);
    char tmpdir[256];
    snprintf(tmpdir, sizeof tmpdir, "%s/tmp", g_dir);
    assert_int_equal(mkdir(tmpdir, 0700), 0);
    setenv("TMPDIR", tmpdir, 1);
    int fd, port = refused_port(&fd);
    static const struct {
        const char *args;
        int code;
        const char *msg;
    } cases[] = {
        {"run two.json --in bad.npy --in b.npy", 1, "bad.npy: not a .npy file (bad magic)"},
        {"run two.json --in a=short.npy --in b=b.npy", 1,
         "short.npy: shape [3], but model input 'a' is [2,3]"},
        {"run two.json --in missing.npy --in b.npy", 1, "missing.npy"},
        {"run two.json --in a.npy", 2, "the model has 2 inputs, 1 --in given"},
        {"run two.json --in c=a.npy --in b=b.npy", 2, "the model has no input 'c'"},
        {"bench two.json --in a.npy --in short.npy", 1,
         "short.npy: shape [3], but model input 'b' is [2,3]"},
        {"ab two.json --in a.npy --in bad.npy", 1, "bad.npy: not a .npy file (bad magic)"},
        {"ab two.json --in short.npy --in b.npy", 1,
         "short.npy: shape [3], but model input 'a' is [2,3]"},
    };
    const char *o;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int rc = tether(&o, "%s --device tcp://127.0.0.1:%d", cases[i].args, port);
        if (rc != cases[i].code || !strstr(o, cases[i].msg) || strstr(o, "connect")) {
            fail_msg("%s: exit %d: %s", cases[i].args, rc, o);
        }
        assert_int_equal(dir_entries(tmpdir), 0); /* nothing was compiled */
    }
    /* --reference: the same check, the same message */
    int rc = tether(&o, "run two.json --reference --in a=short.npy --in b=b.npy");
    assert_int_equal(rc, 1);
    assert_non_null(strstr(o, "short.npy: shape [3], but model input 'a' is [2,3]"));
    /* with good inputs the device is what fails: the check holds nothing else back */
    rc = tether(&o, "run two.json --in a.npy --in b.npy --device tcp://127.0.0.1:%d", port);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(o, "cannot connect"));
    close(fd);
    unsetenv("TMPDIR");
}

/* A decompression bomb as an .npz input (1 MB inflating to 1 GiB of float32) is refused from its
 * member's header, under a memory limit the old reader (which inflated the whole member first)
 * could not run in; the same commands run under that limit with real inputs. */
void test_npz_bomb(void **state) {
    (void)state;
    write_two_io_model();
    int64_t shape[2] = {2, 3};
    char p[256];
    snprintf(p, sizeof p, "%s/b.npy", g_dir);
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, shape, 2, g_b), 0);
    snprintf(p, sizeof p, "%s/a.npy", g_dir);
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, shape, 2, g_a), 0);
    snprintf(p, sizeof p, "%s/bomb.npz", g_dir);
    uint64_t size =
        tt_write_npz_bomb(p, "a.npy", "<f4", (uint64_t)1 << 28, (uint64_t)1 << 30, UINT64_MAX);
    assert_true(size > 0 && size < (2u << 20));
    const char *o;
    if (tether(&o, "compile two.json -o art --quiet")) {
        fail_msg("%s", o);
    }
#ifdef TETHER_TEST_ASAN
    /* the sanitizer reserves terabytes of address space: limit its allocations instead */
    g_limit = "ASAN_OPTIONS=\"$ASAN_OPTIONS:allocator_may_return_null=1:max_allocation_size_mb="
              "256\"";
#else
    g_limit = "ulimit -v 400000 &&"; /* 400 MB of address space */
#endif
    static const char *const cmds[] = {"run art", "bench art --number 1 --repeat 1", "run two.json",
                                       "run two.json --reference",
                                       "ab two.json --number 1 --repeat 1"};
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        int rc = tether(&o, "%s --in a=bomb.npz --in b=b.npy", cmds[i]);
        if (rc != 1 || !strstr(o, "bomb.npz:a: shape [268435456], but model input 'a' is [2,3]")) {
            fail_msg("%s: exit %d: %s", cmds[i], rc, o);
        }
    }
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        int rc = tether(&o, "%s --in a=a.npy --in b=b.npy", cmds[i]);
        if (rc) {
            fail_msg("%s under the limit: exit %d: %s", cmds[i], rc, o);
        }
    }
    g_limit = "";
}

#endif

/* Every element type through the CLI: a JSON model with int64, bool and float16 inputs and
 * outputs (and an .npz of uint16/uint64/bfloat16 arrays) runs on the device (local:) and through
 * --reference with the same bytes out; ab compares output by output (exact for integers and
 * bool, a float16 tolerance for float16) and says so, in the table and in --json. */
void test_typed_io(void **state) {
    (void)state;
    char p[256];
    snprintf(p, sizeof p, "%s/typed.json", g_dir);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs("{\"format\":\"tether-model\",\"version\":1,\"name\":\"typed\",\"tensors\":["
          "{\"name\":\"a\",\"dtype\":\"int64\",\"shape\":[2,3]},"
          "{\"name\":\"b\",\"dtype\":\"int64\",\"shape\":[2,3]},"
          "{\"name\":\"h\",\"dtype\":\"float16\",\"shape\":[4]},"
          "{\"name\":\"m\",\"dtype\":\"bool\",\"shape\":[4]}],"
          "\"inputs\":[\"a\",\"b\",\"h\",\"m\"],\"outputs\":[\"s\",\"g\",\"hs\",\"nm\"],\"nodes\":["
          "{\"name\":\"add\",\"op\":\"add\",\"inputs\":[\"a\",\"b\"],\"outputs\":[\"s\"]},"
          "{\"name\":\"gt\",\"op\":\"greater\",\"inputs\":[\"a\",\"b\"],\"outputs\":[\"g\"]},"
          "{\"name\":\"hadd\",\"op\":\"add\",\"inputs\":[\"h\",\"h\"],\"outputs\":[\"hs\"]},"
          "{\"name\":\"not\",\"op\":\"not\",\"inputs\":[\"m\"],\"outputs\":[\"nm\"]}]}\n",
          f);
    fclose(f);
    int64_t s23[] = {2, 3}, s4[] = {4};
    int64_t a[6] = {1, -5, 3, (1LL << 53) + 1, INT64_MAX - 1, -1};
    int64_t b[6] = {2, -7, 3, 1, 1, -1};
    uint16_t h[4] = {0x3c00, 0xc000, 0x3555, 0x7bff}; /* 1, -2, 0.33325, 65504 */
    uint8_t m[4] = {1, 0, 0, 1};
    const char *names[4] = {"a", "b", "h", "m"};
    tether_npy arrs[4] = {{TETHER_INT64, 2, {2, 3}, a, sizeof a},
                          {TETHER_INT64, 2, {2, 3}, b, sizeof b},
                          {TETHER_DTYPE(kDLFloat, 16), 1, {4}, h, sizeof h},
                          {TETHER_BOOL, 1, {4}, m, sizeof m}};
    snprintf(p, sizeof p, "%s/a.npy", g_dir);
    assert_int_equal(tether_npy_write(p, TETHER_INT64, s23, 2, a), 0);
    snprintf(p, sizeof p, "%s/b.npy", g_dir);
    assert_int_equal(tether_npy_write(p, TETHER_INT64, s23, 2, b), 0);
    snprintf(p, sizeof p, "%s/h.npy", g_dir);
    assert_int_equal(tether_npy_write(p, TETHER_DTYPE(kDLFloat, 16), s4, 1, h), 0);
    snprintf(p, sizeof p, "%s/m.npy", g_dir);
    assert_int_equal(tether_npy_write(p, TETHER_BOOL, s4, 1, m), 0);
    snprintf(p, sizeof p, "%s/typed_in.npz", g_dir);
    assert_int_equal(tether_npz_write(p, 4, names, arrs), 0);
    const char *o;
    /* bench runs the compiled model on the device like run (and times it) */
    if (tether(&o, "bench typed.json --in a.npy --in b.npy --in h.npy --in m.npy --repeat 2 "
                   "--out dev.npz")) {
        fail_msg("%s", o);
    }
    if (tether(&o, "run typed.json --reference --in typed_in.npz --out ref.npz")) {
        fail_msg("%s", o);
    }
    const int64_t want_s[6] = {3, -12, 6, (1LL << 53) + 2, INT64_MAX, -2};
    const uint8_t want_g[6] = {0, 1, 0, 1, 1, 0}, want_nm[4] = {0, 1, 1, 0};
    const uint16_t want_hs[4] = {0x4000, 0xc400, 0x3955, 0x7c00}; /* 65504 * 2 = inf */
    const char *files[2] = {"dev.npz", "ref.npz"};
    for (int k = 0; k < 2; k++) {
        tether_npy t;
        snprintf(p, sizeof p, "%s/%s", g_dir, files[k]);
        assert_int_equal(tether_npz_read_member(p, "s", &t), 0);
        assert_true(tether_dtype_equal(t.dtype, TETHER_INT64));
        assert_memory_equal(t.data, want_s, sizeof want_s);
        tether_npy_free(&t);
        assert_int_equal(tether_npz_read_member(p, "g", &t), 0);
        assert_true(tether_dtype_equal(t.dtype, TETHER_BOOL));
        assert_memory_equal(t.data, want_g, 6);
        tether_npy_free(&t);
        assert_int_equal(tether_npz_read_member(p, "hs", &t), 0);
        assert_true(tether_dtype_equal(t.dtype, TETHER_DTYPE(kDLFloat, 16)));
        assert_memory_equal(t.data, want_hs, sizeof want_hs);
        tether_npy_free(&t);
        assert_int_equal(tether_npz_read_member(p, "nm", &t), 0);
        assert_memory_equal(t.data, want_nm, 4);
        tether_npy_free(&t);
    }
    /* a float16 file for the int64 input: refused, both sides named */
    assert_int_equal(tether(&o, "run typed.json --reference --in a=h.npy --in b=b.npy --in h=h.npy "
                                "--in m=m.npy --out x.npz"),
                     1);
    assert_non_null(strstr(o, "dtype float16, but model input 'a' is int64"));
    /* ab: generated inputs of each type; every output compared and reported */
    if (tether(&o, "ab typed.json --repeat 4 --min-repeat-ms 1 --json ab.json")) {
        fail_msg("%s", o);
    }
    assert_non_null(strstr(o, "'s' (int64)"));
    assert_non_null(strstr(o, "'g' (bool)"));
    assert_non_null(strstr(o, "equal (exact)"));
    assert_non_null(strstr(o, "'hs' (float16)"));
    assert_non_null(strstr(o, "within rtol 0.001, atol 0.001"));
    cJSON *j = read_json("ab.json");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "rtol")));
    const cJSON *outs =
        cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "abis"), 0), "outputs");
    assert_int_equal(cJSON_GetArraySize(outs), 4);
    assert_string_equal(str(cJSON_GetArrayItem(outs, 1), "dtype"), "bool");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(outs, 1), "exact")));
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(outs, 2), "equal")));
    assert_true(cJSON_GetObjectItem(cJSON_GetArrayItem(outs, 2), "rtol")->valuedouble == 1e-3);
    cJSON_Delete(j);
}
