/*
 * The `tether` CLI process against the firmware on QEMU mps2-an385 (-icount shift=0), exactly as
 * a user drives it: info; the KWS example model compiled for cortex-m3 in both ABIs (one through
 * `tether run MODEL --abi unpacked`, one through `tether compile --upload` and `tether run
 * ARTIFACT_DIR`), outputs equal to `tether run --reference`; bench with identical cycle counts
 * across repeats and across invocations; a module given as .o (linked on the fly) with a packed
 * function, a non-zero return code passed through with the device's LOG line; refusals before
 * anything is sent (an x86_64 artifact, a firmware.json of another build); a function that
 * faults (UsageFault, DIVBYZERO): exit 1 with PC and CFSR, the board back, and the next CLI
 * invocation works; ab with the memory options (pools from HELLO, weights in the code pool).
 * The test owns QEMU (started and stopped here) but not the channel: every command opens it
 * itself. Prints the seed-003 style table of both ABIs.
 * Channel: semihosting's console (mcu_board_start_fast; the UART where the firmware lacks it),
 * since the CLI's work, not the byte path, is the subject (uploads over the UART model at 8-16
 * KiB/s were most of this test's 150 s); cycle counts under -icount are unaffected (the channel
 * is outside the timed region). The serial port lock (busy, --wait) is a UART matter: that case
 * boots a second board of its own on the UART. test_mcu_server/upload/rpc_client/tcp_serial keep
 * the UART's byte path covered.
 * usage: test_mcu_cli FIRMWARE_DIR TETHER_EXECUTABLE
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "mcu_client.h"
#include "tether/host.h"
#include "tether/npy.h"

static mcu_board board;
static mcu_board uart_board; /* test_busy_and_wait's, on the UART */
static const char *tether_exe;
static char workdir[256];
static char model[512];
static char in_npy[300], ref_npy[300];
static char on_board[200]; /* "for cortex-m3 on URL" of ab's report */

typedef struct abi_result {
    unsigned long long image, code, rodata, bss, cycles, stack;
} abi_result;
static abi_result results[2]; /* 0 unpacked, 1 packed */

static char out_text[65536], err_text[16384];

/* Runs `tether ARGS...` (NULL-terminated), stdout/stderr captured; returns the exit code. */
static int cli(const char *first, ...) {
    va_list ap;
    va_start(ap, first);
    int rc = mcu_cli_vrun(tether_exe, workdir, out_text, sizeof out_text, err_text, sizeof err_text,
                          first, ap);
    va_end(ap);
    return rc;
}

static unsigned long long number_after(const char *text, const char *key) {
    const char *p = strstr(text, key);
    if (!p) {
        fail_msg("'%s' not in the output", key);
    }
    return strtoull(p + strlen(key), NULL, 10);
}

static void write_npy(const char *path, DLDataType dt, const int64_t *shape, int ndim,
                      const void *data) {
    assert_int_equal(tether_npy_write(path, dt, shape, ndim, data), 0);
}

/* Asserts that two float32 .npy files agree within 1e-5 + 1e-4 relative. */
static void assert_close(const char *path, const char *ref) {
    tether_npy a, b;
    assert_int_equal(tether_npy_read(path, &a), 0);
    assert_int_equal(tether_npy_read(ref, &b), 0);
    assert_int_equal(a.nbytes, b.nbytes);
    assert_int_equal(a.ndim, b.ndim);
    const float *x = a.data, *y = b.data;
    for (size_t i = 0; i < a.nbytes / 4; i++) {
        if (fabsf(x[i] - y[i]) > 1e-5f + 1e-4f * fabsf(y[i])) {
            fail_msg("%s[%zu] = %.9g, reference %.9g", path, i, x[i], y[i]);
        }
    }
    tether_npy_free(&a);
    tether_npy_free(&b);
}

/* Parses the image and run lines of one `tether run` on the board. */
static void parse_run(abi_result *r) {
    r->image = number_after(out_text, "MCU image ");
    r->code = number_after(out_text, "(code ");
    r->rodata = number_after(out_text, "read-only data ");
    r->bss = number_after(out_text, ") + .bss ");
    r->cycles = number_after(out_text, "us (");
    r->stack = number_after(out_text, "stack high-water mark ");
}

static int setup(void **state) {
    (void)state;
    if (mcu_workdir_create(workdir, sizeof workdir, "cli") != 0) {
        return -1;
    }
    unsetenv("TETHER_FIRMWARE");
    unsetenv("TETHER_DEVICE");
    snprintf(model, sizeof model, "%s/examples/kws/kws.json", TETHER_SOURCE_DIR);
    static float input[490];
    mcu_kws_input(input, 490);
    snprintf(in_npy, sizeof in_npy, "%s/in.npy", workdir);
    snprintf(ref_npy, sizeof ref_npy, "%s/ref.npy", workdir);
    int64_t shape[4] = {1, 1, 49, 10};
    if (tether_npy_write(in_npy, TETHER_FLOAT32, shape, 4, input) != 0) {
        return -1;
    }
    if (mcu_board_start_fast(&board, true) != 0) {
        mcu_board_stop(&board);
        return -1;
    }
    /* QEMU keeps running; every CLI process opens the channel itself. */
    close(board.fd);
    board.fd = -1;
    return 0;
}

static int teardown(void **state) {
    (void)state;
    mcu_board_stop(&board);
    if (uart_board.pid > 0) { /* test_busy_and_wait failed before it stopped it */
        mcu_board_stop(&uart_board);
    }
    return mcu_workdir_remove(workdir);
}

static void test_info(void **state) {
    (void)state;
    assert_int_equal(cli("info", "--device", board.url, NULL), 0);
    assert_non_null(strstr(out_text, "board              mps2-an385\n"));
    assert_non_null(strstr(out_text, "boot count         0\n"));
    assert_non_null(strstr(out_text, "clock rate         25000000 Hz\n"));
    assert_non_null(strstr(out_text, "load address       0x20050000\n"));
    assert_non_null(strstr(out_text, "load size          131072 bytes\n"));
    assert_non_null(strstr(out_text, "exports id         0x"));
    assert_non_null(strstr(out_text, "max frame          1024 bytes\n"));
    assert_non_null(strstr(out_text, "window             2\n"));
    assert_non_null(strstr(out_text, "array heap         262144 bytes\n"));
    /* the JSON keys are the labels (with the unit): the same figures */
    assert_int_equal(cli("info", "--device", board.url, "--json", NULL), 0);
    assert_non_null(strstr(out_text, "\"board\":\t\"mps2-an385\""));
    assert_non_null(strstr(out_text, "\"boot_count\":\t0"));
    assert_non_null(strstr(out_text, "\"load_address\":\t\"0x20050000\""));
    assert_non_null(strstr(out_text, "\"load_size_bytes\":\t131072"));
    assert_non_null(strstr(out_text, "\"clock_rate_hz\":\t25000000"));
    assert_non_null(strstr(out_text, "\"max_frame_bytes\":\t1024"));
    assert_non_null(strstr(out_text, "\"array_heap_bytes\":\t262144"));
    /* the device's info LOG lines stay out of the output unless TETHER_VERBOSE is set */
    assert_null(strstr(err_text, "device info"));
}

static void test_model_unpacked(void **state) {
    (void)state;
    assert_int_equal(cli("run", model, "--reference", "--in", in_npy, "--out", ref_npy, NULL), 0);
    char out[300];
    snprintf(out, sizeof out, "%s/out-unpacked.npy", workdir);
    /* compiled for the board's core (from HELLO), linked at its load region, uploaded, run */
    assert_int_equal(cli("run", model, "--abi", "unpacked", "--device", board.url, "--in", in_npy,
                         "--out", out, NULL),
                     0);
    assert_non_null(strstr(out_text, "linked at 0x20050000 for mps2-an385"));
    assert_non_null(strstr(out_text, "cycles at 25000000 Hz"));
    parse_run(&results[0]);
    assert_close(out, ref_npy);
}

static void test_model_packed_compile_upload(void **state) {
    (void)state;
    char dir[300], fwdir[600], out[300];
    snprintf(dir, sizeof dir, "%s/kws-packed", workdir);
    snprintf(fwdir, sizeof fwdir, "%s", mcu_fw_dir);
    snprintf(out, sizeof out, "%s/out-packed.npy", workdir);
    assert_int_equal(cli("compile", model, "-o", dir, "--target", "cortex-m3", "--abi", "packed",
                         "--quiet", "--upload", "--device", board.url, "--firmware", fwdir, NULL),
                     0);
    assert_non_null(strstr(out_text, "SHA-256 verified by the device, 4 functions loaded"));
    assert_non_null(strstr(out_text, "tether_model_main"));
    char image[400];
    snprintf(image, sizeof image, "%s/libtether_model-mps2-an385.bin", dir);
    assert_int_equal(access(image, R_OK), 0);
    /* the artifact directory runs like any other (linked again, uploaded again) */
    assert_int_equal(cli("run", dir, "--device", board.url, "--in", in_npy, "--out", out, NULL), 0);
    parse_run(&results[1]);
    assert_close(out, ref_npy);
}

static void test_bench(void **state) {
    (void)state;
    char dir[300];
    snprintf(dir, sizeof dir, "%s/kws-packed", workdir);
    unsigned long long first[2], min[2], max[2];
    for (int k = 0; k < 2; k++) {
        assert_int_equal(cli("bench", dir, "--device", board.url, "--in", in_npy, "--number", "2",
                             "--repeat", "3", NULL),
                         0);
        const char *line = strstr(out_text, "cycles per call (25000000 Hz timer)");
        assert_non_null(line);
        first[k] = number_after(line, "first call ");
        min[k] = number_after(line, ", min ");
        max[k] = number_after(line, ", max ");
        /* under -icount every repeat runs the same instructions; the 25 MHz timer ticks every
         * 40 instructions of virtual time, so where a call starts within a tick can move its
         * count by one tick, never more */
        assert_true(max[k] - min[k] <= 1);
    }
    /* ... and so does every call, in every session: the first call of each bench equals the
     * call of `tether run` before (to the same tick) */
    assert_true(first[0] + 1 >= first[1] && first[1] + 1 >= first[0]);
    assert_true(min[0] + 1 >= min[1] && min[1] + 1 >= min[0]);
    assert_true(first[0] + 1 >= results[1].cycles && results[1].cycles + 1 >= first[0]);
}

static void test_object_module(void **state) {
    (void)state;
    char obj[300], cmd[2048], a[300], b[300], c[300], bad[300];
    snprintf(obj, sizeof obj, "%s/math_module.o", workdir);
    snprintf(cmd, sizeof cmd,
             "arm-none-eabi-gcc -mcpu=cortex-m3 -mthumb -std=c11 -Os -ffreestanding "
             "-ffunction-sections -fdata-sections -I%s/crt/include -I%s/dlpack-include -c "
             "%s/tests/mcu/modules/math_module.c -o %s",
             TETHER_SOURCE_DIR, TETHER_BINARY_DIR, TETHER_SOURCE_DIR, obj);
    assert_int_equal(system(cmd), 0);
    float va[3] = {1.0f, 2.0f, 3.0f}, vb[3] = {4.0f, 5.0f, 6.0f};
    int32_t vi[3] = {1, 2, 3};
    int64_t three = 3;
    snprintf(a, sizeof a, "%s/a.npy", workdir);
    snprintf(b, sizeof b, "%s/b.npy", workdir);
    snprintf(c, sizeof c, "%s/c.npy:float32:1", workdir);
    snprintf(bad, sizeof bad, "%s/i.npy", workdir);
    write_npy(a, TETHER_FLOAT32, &three, 1, va);
    write_npy(b, TETHER_FLOAT32, &three, 1, vb);
    write_npy(bad, TETHER_INT32, &three, 1, vi);
    /* a packed function of an object file, linked for the board on the fly */
    assert_int_equal(
        cli("run", obj, "dot_f32", "--device", board.url, "--in", a, "--in", b, "--out", c, NULL),
        0);
    assert_non_null(strstr(out_text, "math_module.o: MCU image"));
    tether_npy r;
    snprintf(c, sizeof c, "%s/c.npy", workdir);
    assert_int_equal(tether_npy_read(c, &r), 0);
    assert_true(((float *)r.data)[0] == 64.0f); /* scale 2 * dot 32 + bias[3 % 4] = 0 */
    tether_npy_free(&r);
    /* a non-zero return: the device's message comes through its LOG line and the error */
    snprintf(c, sizeof c, "%s/c.npy:float32:1", workdir);
    assert_int_equal(cli("run", obj, "dot_f32", "--device", board.url, "--in", bad, "--in", bad,
                         "--out", c, NULL),
                     1);
    assert_non_null(strstr(err_text, "device warning: dot_f32 returned -6"));
    assert_non_null(strstr(err_text, "CALL failed: function 'dot_f32' returned -6: dot_f32 a"));
    /* a module calling what the firmware does not export: refused by the link step, with the
     * linker's reason and no path to the removed temporary log */
    char src[300], bobj[300];
    snprintf(src, sizeof src, "%s/calls_puts.c", workdir);
    snprintf(bobj, sizeof bobj, "%s/calls_puts.o", workdir);
    FILE *f = fopen(src, "w");
    assert_non_null(f);
    fputs("#include \"tether/crt.h\"\n"
          "int puts(const char *s);\n"
          "static void hello(void) { puts(\"hi\"); }\n"
          "static const tether_func_entry entries[] = {\n"
          "    {\"hello\", TETHER_ABI_UNPACKED, 0, {.unpacked = hello}}};\n"
          "const tether_func_registry tether_module_registry = {entries, 1};\n",
          f);
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "arm-none-eabi-gcc -mcpu=cortex-m3 -mthumb -Os -ffreestanding -I%s/crt/include "
             "-I%s/dlpack-include -c %s -o %s",
             TETHER_SOURCE_DIR, TETHER_BINARY_DIR, src, bobj);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(cli("run", bobj, "hello", "--device", board.url, NULL), 1);
    assert_non_null(
        strstr(err_text, "calls 'puts', which the mps2-an385 firmware does not export"));
    assert_null(strstr(err_text, "module.bin.log"));
}

/* ab on the board: the target comes from HELLO (no --target); both ABIs equal the interpreter;
 * the board holds one module at a time, so the ABIs are measured one after the other. */
static void test_ab_on_board(void **state) {
    (void)state;
    snprintf(on_board, sizeof on_board, "for cortex-m3 on %s\n", board.url);
    assert_int_equal(cli("ab", model, "--device", board.url, "--number", "1", "--repeat", "1",
                         "--min-repeat-ms", "0", "--in", in_npy, NULL),
                     0);
    assert_non_null(strstr(out_text, on_board));
    assert_non_null(strstr(out_text, "outputs equal the interpreter"));
    assert_non_null(strstr(out_text, "one ABI after the other"));
    assert_non_null(strstr(out_text, "too few repeats"));
}

/* ab takes the memory options run and bench take: pool_demo (320 KiB of activations) does not
 * fit the board's load region alone, but A/B-tests with its SRAM and PSRAM pools (sizes from
 * the board's HELLO: --pool NAME) and the weights in its code pool. */
static void test_ab_memory_options_on_board(void **state) {
    (void)state;
    static const char demo[] = TETHER_SOURCE_DIR "/examples/pools/pool_demo.json";
    static float img[64 * 64];
    for (int i = 0; i < 64 * 64; i++) {
        img[i] = (float)((i * 31) % 89) / 89.0f;
    }
    char in[300];
    snprintf(in, sizeof in, "%s/ab_img.npy", workdir);
    int64_t shape[4] = {1, 1, 64, 64};
    write_npy(in, TETHER_FLOAT32, shape, 4, img);
    assert_int_equal(cli("ab", demo, "--device", board.url, "--repeat", "1", "--min-repeat-ms", "0",
                         "--in", in, NULL),
                     1);
    assert_non_null(strstr(err_text, "does not fit the 131072-byte load region"));
    /* --repeat 2: repeated runs in the same pools (--repeat 4 took 4 more emulated runs, 12 s) */
    int rc = cli("ab", demo, "--device", board.url, "--repeat", "2", "--min-repeat-ms", "0",
                 "--pool", "sram", "--pool", "psram", "--params", "blob", "--params-pool", "code",
                 "--in", in, NULL);
    if (rc) { /* 0: both ABIs ran and equal the interpreter */
        fail_msg("ab with pools: %s%s", out_text, err_text);
    }
    assert_non_null(strstr(out_text, on_board));
    /* a pool the board does not have */
    assert_int_equal(cli("ab", demo, "--device", board.url, "--pool", "flash", "--in", in, NULL),
                     2);
    assert_non_null(strstr(err_text, "--pool flash: the device has no such pool (its pools: "
                                     "sram, psram, code)"));
}

static void test_refusals(void **state) {
    (void)state;
    /* an artifact for tetherd: refused before anything is uploaded */
    char dir[300];
    snprintf(dir, sizeof dir, "%s/kws-x86", workdir);
    assert_int_equal(cli("compile", model, "-o", dir, "--quiet", NULL), 0);
    assert_int_equal(cli("run", dir, "--device", board.url, "--in", in_npy, NULL), 1);
    assert_non_null(strstr(err_text, "compile with --target cortex-m3"));
    assert_null(strstr(out_text, "MCU image"));
    /* a firmware.json of another build (other export addresses) */
    char fw[600], json[700], text[65536];
    snprintf(fw, sizeof fw, "%s/firmware.json", mcu_fw_dir);
    snprintf(json, sizeof json, "%s/other-firmware", workdir);
    assert_int_equal(mkdir(json, 0755), 0);
    FILE *f = fopen(fw, "r");
    assert_non_null(f);
    text[fread(text, 1, sizeof text - 1, f)] = 0;
    fclose(f);
    char *id = strstr(text, "\"exports_id\": \"0x");
    assert_non_null(id);
    id[17] = id[17] == '0' ? '1' : '0';
    snprintf(json, sizeof json, "%s/other-firmware/firmware.json", workdir);
    f = fopen(json, "w");
    fputs(text, f);
    fclose(f);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cp %s/module.ld %s/exports.ld %s/other-firmware/", mcu_fw_dir,
             mcu_fw_dir, workdir);
    assert_int_equal(system(cmd), 0);
    snprintf(dir, sizeof dir, "%s/kws-packed", workdir);
    assert_int_equal(
        cli("run", dir, "--device", board.url, "--firmware", json, "--in", in_npy, NULL), 1);
    assert_non_null(strstr(err_text, "exports id"));
    assert_null(strstr(out_text, "MCU image"));
}

static void test_fault_then_next_command(void **state) {
    (void)state;
    char obj[300], cmd[2048], a[300], z[300], c[300];
    snprintf(obj, sizeof obj, "%s/fault_module.o", workdir);
    snprintf(cmd, sizeof cmd,
             "arm-none-eabi-gcc -mcpu=cortex-m3 -mthumb -std=c11 -Os -ffreestanding "
             "-ffunction-sections -fdata-sections -I%s/crt/include -I%s/dlpack-include -c "
             "%s/tests/mcu/modules/fault_module.c -o %s",
             TETHER_SOURCE_DIR, TETHER_BINARY_DIR, TETHER_SOURCE_DIR, obj);
    assert_int_equal(system(cmd), 0);
    int32_t seven = 7, zero = 0, two = 2;
    int64_t one = 1;
    snprintf(a, sizeof a, "%s/seven.npy", workdir);
    snprintf(z, sizeof z, "%s/zero.npy", workdir);
    write_npy(a, TETHER_INT32, &one, 1, &seven);
    write_npy(z, TETHER_INT32, &one, 1, &zero);
    snprintf(c, sizeof c, "%s/q.npy:int32:1", workdir);
    assert_int_equal(
        cli("run", obj, "div_i32", "--device", board.url, "--in", a, "--in", z, "--out", c, NULL),
        1);
    assert_non_null(strstr(err_text, "UsageFault in 'div_i32'"));
    assert_non_null(strstr(err_text, "pc=0x2005"));
    assert_non_null(strstr(err_text, "cfsr=0x02000000 (DIVBYZERO)"));
    assert_non_null(strstr(err_text, "the device reset after the fault and is back (boot 1"));
    /* the next invocation: a new session on the rebooted board */
    assert_int_equal(cli("info", "--device", board.url, NULL), 0);
    assert_non_null(strstr(out_text, "boot count         1\n"));
    write_npy(z, TETHER_INT32, &one, 1, &two);
    assert_int_equal(
        cli("run", obj, "div_i32", "--device", board.url, "--in", a, "--in", z, "--out", c, NULL),
        0);
    tether_npy q;
    snprintf(c, sizeof c, "%s/q.npy", workdir);
    assert_int_equal(tether_npy_read(c, &q), 0);
    assert_int_equal(((int32_t *)q.data)[0], 3);
    tether_npy_free(&q);
}

/* A serial device is held by one client at a time: a second `tether` is refused naming the
 * holder's pid; with --wait it queues and runs once the holder is done. The lock is the tty's
 * (the semihosting channel is a TCP socket), so this runs on a board of its own on the UART. */
static void test_busy_and_wait(void **state) {
    (void)state;
    if (mcu_board_start(&uart_board, false) != 0) {
        fail_msg("could not start a second board on the UART");
    }
    close(uart_board.fd); /* every CLI process opens the pty itself */
    uart_board.fd = -1;
    const char *url = uart_board.url;
    tether_session *holder;
    if (tether_session_open(&holder, url, NULL)) {
        fail_msg("%s", tether_last_error());
    }
    char want[300];
    snprintf(want, sizeof want, "device busy: %.120s is held by pid %d", url + 7, (int)getpid());
    assert_int_equal(cli("info", "--device", url, NULL), 1);
    assert_non_null(strstr(err_text, want));
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        _exit(cli("info", "--device", url, "--wait", NULL));
    }
    usleep(500 * 1000); /* the waiter is queued (or still starting): either way it must wait */
    tether_session_close(holder);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    mcu_board_stop(&uart_board);
}

/* A model whose linked weights overflow the load region: the message says so, names no path of
 * the removed temporary folders and suggests --params blob, which then runs it. */
static void test_too_big_for_load_region(void **state) {
    (void)state;
    enum { K = 256, N = 160 }; /* 160 KiB of weights, the load region is 128 KiB */
    static float w[K * N], x[K];
    for (int i = 0; i < K * N; i++) {
        w[i] = (float)((i * 37) % 101) / 101.0f - 0.5f;
    }
    for (int i = 0; i < K; i++) {
        x[i] = (float)((i * 13) % 17) / 17.0f;
    }
    char bin[400], json[400], in[400], out[400], ref[400];
    snprintf(bin, sizeof bin, "%s/big.bin", workdir);
    snprintf(json, sizeof json, "%s/big.json", workdir);
    snprintf(in, sizeof in, "%s/big_x.npy", workdir);
    snprintf(out, sizeof out, "%s/big_y.npy", workdir);
    snprintf(ref, sizeof ref, "%s/big_ref.npy", workdir);
    FILE *f = fopen(bin, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(w, sizeof w, 1, f), 1);
    fclose(f);
    f = fopen(json, "w");
    assert_non_null(f);
    fprintf(f,
            "{\"format\": \"tether-model\", \"version\": 1, \"name\": \"big\", \"weights\": "
            "\"big.bin\", \"tensors\": [{\"name\": \"x\", \"shape\": [1, %d]}, {\"name\": \"w\", "
            "\"shape\": [%d, %d], \"offset\": 0, \"length\": %zu}], \"inputs\": [\"x\"], "
            "\"outputs\": [\"y\"], \"nodes\": [{\"name\": \"d\", \"op\": \"dense\", \"inputs\": "
            "[\"x\", \"w\"], \"outputs\": [\"y\"]}]}\n",
            K, K, N, sizeof w);
    fclose(f);
    int64_t shape[2] = {1, K};
    write_npy(in, TETHER_FLOAT32, shape, 2, x);
    assert_int_equal(cli("run", json, "--device", board.url, "--in", in, "--out", out, NULL), 1);
    assert_non_null(strstr(err_text, "does not fit the 131072-byte load region"));
    assert_non_null(strstr(err_text, "--params blob"));
    assert_null(strstr(err_text, "/tether-")); /* no path into a removed temporary folder */
    assert_int_equal(access(out, F_OK), -1);
    assert_int_equal(
        cli("run", json, "--device", board.url, "--params", "blob", "--in", in, "--out", out, NULL),
        0);
    assert_int_equal(cli("run", json, "--reference", "--in", in, "--out", ref, NULL), 0);
    assert_close(out, ref);
}

/* tether tune on the board: KWS's two workloads, 2 trials each, every candidate linked as a RAM
 * image and timed on the board; the log holds the board's target (cortex-m3), a rerun resumes. */
static void test_tune_on_board(void **state) {
    (void)state;
    static const char kws_json[] = TETHER_SOURCE_DIR "/examples/kws/kws.json";
    char log[300];
    snprintf(log, sizeof log, "%s/tune.json", workdir);
    assert_int_equal(cli("tune", kws_json, "--device", board.url, "--trials", "2", "--number", "1",
                         "--repeat", "2", "--log", log, NULL),
                     0);
    assert_non_null(strstr(out_text, "(cortex-m3, cpu baseline): 2 workloads"));
    assert_non_null(strstr(out_text, "tuned 4 candidates"));
    assert_non_null(strstr(out_text, "linked at 0x"));
    FILE *f = fopen(log, "r");
    assert_non_null(f);
    char line[4096];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        assert_non_null(strstr(line, "\"target\":\"cortex-m3\""));
        assert_null(strstr(line, "\"us\":-1")); /* no failed candidate */
        n++;
    }
    fclose(f);
    assert_int_equal(n, 4);
    assert_int_equal(
        cli("tune", kws_json, "--device", board.url, "--trials", "2", "--log", log, NULL), 0);
    assert_non_null(strstr(out_text, "tuned 0 candidates"));
}

/* Memory pools on the board: HELLO lists the linker script's regions; examples/pools/pool_demo
 * (two 160 KiB activations live together, 320 KiB > the 256 KiB SRAM) does not fit a static
 * workspace or SRAM alone, runs with SRAM + PSRAM in both ABIs (and all in PSRAM, and with the
 * weights blob in the code memory) equal to the interpreter; the cycles of each placement are
 * printed (QEMU counts instructions: no wait states, so they match). */
static void test_two_pools_on_board(void **state) {
    (void)state;
    assert_int_equal(cli("info", "--device", board.url, NULL), 0);
    assert_non_null(strstr(out_text, "pools              sram, psram, code\n"));
    assert_non_null(strstr(out_text, "pool bytes         262144, 16777216, 3932160\n"));
    static const char demo[] = TETHER_SOURCE_DIR "/examples/pools/pool_demo.json";
    static float img[64 * 64];
    for (int i = 0; i < 64 * 64; i++) {
        img[i] = (float)((i * 29) % 97) / 97.0f;
    }
    char in[300], ref[300], out[300];
    snprintf(in, sizeof in, "%s/img.npy", workdir);
    snprintf(ref, sizeof ref, "%s/img_ref.npy", workdir);
    snprintf(out, sizeof out, "%s/img_out.npy", workdir);
    int64_t shape[4] = {1, 1, 64, 64};
    write_npy(in, TETHER_FLOAT32, shape, 4, img);
    assert_int_equal(cli("run", demo, "--reference", "--in", in, "--out", ref, NULL), 0);
    /* one static workspace: 320 KiB of .bss in a 128 KiB load region */
    assert_int_equal(cli("run", demo, "--device", board.url, "--in", in, NULL), 1);
    assert_non_null(strstr(err_text, "does not fit the 131072-byte load region"));
    assert_non_null(strstr(err_text, "use --pool"));
    /* SRAM alone */
    assert_int_equal(
        cli("run", demo, "--device", board.url, "--pool", "sram:global:200K", "--in", in, NULL), 1);
    assert_non_null(strstr(err_text, "fits in no candidate pool: sram has"));
    /* a pool larger than the board's region: the board refuses the allocation */
    assert_int_equal(
        cli("run", demo, "--device", board.url, "--pool", "sram:global:1M", "--in", in, NULL), 1);
    assert_non_null(strstr(err_text, "pool 'sram' (327680 bytes)"));
    /* a params pool the board does not have */
    assert_int_equal(cli("run", demo, "--device", board.url, "--pool", "sram:global:200K", "--pool",
                         "psram:global:1M", "--params", "blob", "--params-pool", "flash", "--in",
                         in, NULL),
                     1);
    assert_non_null(strstr(err_text, "pool 'flash', which the device does not have (its pools: "
                                     "sram, psram, code)"));
    struct {
        const char *label;
        const char *args[8];
    } runs[] = {
        {"sram+psram unpacked", {"--pool", "sram:global:200K", "--pool", "psram:global:1M"}},
        {"sram+psram packed",
         {"--abi", "packed", "--pool", "sram:global:200K", "--pool", "psram:global:1M"}},
        {"all in psram", {"--pool", "psram:global:1M"}},
        {"sram+psram, weights in code",
         {"--pool", "sram:global:200K", "--pool", "psram:global:1M", "--params", "blob",
          "--params-pool", "code"}},
    };
    unsigned long long cycles[4];
    for (int r = 0; r < 4; r++) {
        const char *argv[24] = {"run", demo, "--device", board.url};
        int n = 4;
        for (int k = 0; k < 8 && runs[r].args[k]; k++) {
            argv[n++] = runs[r].args[k];
        }
        argv[n++] = "--in";
        argv[n++] = in;
        argv[n++] = "--out";
        argv[n++] = out;
        argv[n] = NULL;
        int rc = cli(argv[0], argv[1], argv[2], argv[3], argv[4], argv[5], argv[6], argv[7],
                     argv[8], argv[9], argv[10], argv[11], argv[12], argv[13], argv[14], argv[15],
                     argv[16], argv[17], NULL);
        if (rc != 0) {
            fail_msg("%s: exit %d", runs[r].label, rc);
        }
        assert_close(out, ref);
        cycles[r] = number_after(out_text, "us (");
        assert_true(cycles[r] > 0);
        unlink(out);
    }
    printf("pool_demo on cortex-m3 (QEMU mps2-an385, -icount shift=0; cycles at 25 MHz)\n");
    for (int r = 0; r < 4; r++) {
        printf("  %-30s %10llu cycles\n", runs[r].label, cycles[r]);
    }
}

static void test_table(void **state) {
    (void)state;
    printf("kws on cortex-m3 through the tether CLI (QEMU mps2-an385, -icount shift=0; cycles = "
           "SysTick ticks at 25 MHz)\n");
    printf("  abi        image bytes  code bytes  rodata bytes  bss bytes   cycles  stack bytes\n");
    for (int i = 0; i < 2; i++) {
        printf("  %-9s  %11llu  %10llu  %12llu  %9llu  %7llu  %11llu\n",
               i == 0 ? "unpacked" : "packed", results[i].image, results[i].code, results[i].rodata,
               results[i].bss, results[i].cycles, results[i].stack);
    }
    assert_true(results[0].stack > 0 && results[1].stack > 0);
    /* the measured high-water mark includes any interrupt that lands during the call (the UART
     * and SysTick handlers' frames, 20-50 bytes on the M3; interrupts stay on during calls), so
     * the ABIs' difference is compared with that margin; the code sizes are exact */
    assert_true(results[0].stack < results[1].stack + 64);
    assert_true(results[0].code < results[1].code);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s FIRMWARE_DIR TETHER_EXECUTABLE\n", argv[0]);
        return 2;
    }
    mcu_fw_dir = argv[1];
    tether_exe = argv[2];
    setvbuf(stdout, NULL, _IOLBF, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_info),
        cmocka_unit_test(test_model_unpacked),
        cmocka_unit_test(test_model_packed_compile_upload),
        cmocka_unit_test(test_bench),
        cmocka_unit_test(test_object_module),
        cmocka_unit_test(test_ab_on_board),
        cmocka_unit_test(test_ab_memory_options_on_board),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_fault_then_next_command),
        cmocka_unit_test(test_busy_and_wait),
        cmocka_unit_test(test_too_big_for_load_region),
        cmocka_unit_test(test_two_pools_on_board),
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_tune_on_board),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
