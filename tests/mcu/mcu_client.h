/*
 * Test-side client for tether MCU firmware running under QEMU: starts scripts/qemu-board, opens
 * the pty it prints (or the TCP socket of the semihosting channel), and speaks the RPC protocol
 * over UART framing with rpc/'s tiny codec (the host library does not take part, so these tests pin
 * the firmware's wire behaviour directly).
 *
 * Ownership: a mcu_board owns the QEMU process (stopped by mcu_board_stop, also on test
 * failure paths through the cmocka teardown) and the pty descriptor. Decoded replies borrow from
 * the board's reply buffer and stay valid until the next request.
 */
#ifndef TETHER_TESTS_MCU_CLIENT_H
#define TETHER_TESTS_MCU_CLIENT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cmocka.h>

#include "tether/crt.h"
#include "tether/rpc/codec.h"
#include "tether/rpc/frame.h"
#include "tether/rpc/proto.h"

#define MCU_MAX_FRAME 65535u

typedef struct mcu_board {
    pid_t pid;     /* scripts/qemu-board */
    int out_fd;    /* its stdout (the URL line) */
    int fd;        /* the pty (a TCP socket with mcu_board_start_semihost) */
    char url[128]; /* uart:///dev/pts/N (tcp-serial://127.0.0.1:PORT) */
    uint32_t next_id;
    uint32_t device_max_frame;
    uint8_t rx[MCU_MAX_FRAME];
    uint8_t reply[MCU_MAX_FRAME];
    size_t reply_len; /* bytes of the last reply in `reply` (its encoded message) */
    uint8_t tx[MCU_MAX_FRAME];
    uint8_t txf[TETHER_UART_ENCODED_MAX(MCU_MAX_FRAME)];
    tether_uart_unframer unframer;
    char last_log[1100]; /* text of the most recent LOG notification */
    uint32_t logs;       /* LOG notifications seen */
    uint32_t boots;      /* LOG lines announcing a boot ("board ... boot N") */
} mcu_board;

/* Firmware ELF and generated linker scripts of the board under test (from argv[1]). */
extern const char *mcu_fw_dir;

/* 0 = ok. Skips (exit 77) when QEMU is missing. */
int mcu_board_start(mcu_board *b, bool icount);
/* The same with the firmware's byte channel over Arm semihosting's console (scripts/qemu-board
 * --semihost-serial on a free port; CMSDK boards): b->fd is a TCP connection to it, b->url its
 * tcp-serial:// URL. Close b->fd (and set it to -1) before another client connects. */
int mcu_board_start_semihost(mcu_board *b, bool icount);
/* True when the firmware under test has the semihosting channel ("channel_select" in its
 * firmware.json: the CMSDK boards). */
bool mcu_fw_has_semihost(void);
/* For tests whose subject is not the UART's byte path: mcu_board_start_semihost when the
 * firmware has the channel (uploads at about 1 MiB/s instead of the UART model's 8-16 KiB/s; the
 * channel is outside the timed region: cycle counts under -icount agree with the UART's to
 * the tick), else
 * mcu_board_start. b->url says which (tcp-serial:// or uart://). */
int mcu_board_start_fast(mcu_board *b, bool icount);
void mcu_board_stop(mcu_board *b);

/* Sends `req` (id assigned here) and waits up to timeout_ms for its reply; LOG notifications in
 * between are recorded. Returns 0 with *rep decoded (possibly an ERROR reply), or -1 on timeout
 * or a malformed reply. The reply's bytes stay in b->reply (b->reply_len). */
int mcu_request(mcu_board *b, tether_rpc_msg *req, tether_rpc_msg *rep, int timeout_ms);

/* Sends one encoded message (any bytes, e.g. a malformed request) whose reply carries `id`
 * (type: for messages only) and waits for that reply as mcu_request does. */
int mcu_request_bytes(mcu_board *b, const uint8_t *msg, size_t msg_len, uint32_t id, uint32_t type,
                      tether_rpc_msg *rep, int timeout_ms);

/* Waits for a LOG line containing `needle`; 0 when seen. */
int mcu_wait_log(mcu_board *b, const char *needle, int timeout_ms);

/* Sends raw bytes (for framing tests). */
int mcu_write_raw(mcu_board *b, const void *p, size_t n);

/* Helpers that assert success and return the useful part. */
void mcu_hello(mcu_board *b, tether_rpc_msg *rep);
uint64_t mcu_alloc(mcu_board *b, const int64_t *shape, int ndim, DLDataType dt, uint64_t *nbytes);
void mcu_free(mcu_board *b, uint64_t array);
void mcu_copy_to(mcu_board *b, uint64_t array, const void *data, size_t n);
void mcu_copy_from(mcu_board *b, uint64_t array, void *data, size_t n);
uint64_t mcu_get_function(mcu_board *b, uint64_t module, const char *name, uint32_t *abi);
/* Calls and returns the reply (asserting it is a CALL reply). */
void mcu_call(mcu_board *b, uint64_t func, uint32_t abi, const tether_rpc_arg *args, uint32_t n,
              tether_rpc_call_rep *out);
/* Calls and expects an ERROR reply; returns its code and copies the message. */
int32_t mcu_call_error(mcu_board *b, uint64_t func, uint32_t abi, const tether_rpc_arg *args,
                       uint32_t n, char *msg, size_t msg_size);

tether_rpc_arg mcu_arg_array(uint64_t handle);
tether_rpc_arg mcu_arg_int(int64_t v);

/* ---- fixtures shared by the MCU tests ---- */

/* Exits 77 (skipped, saying why) when arm-none-eabi-gcc is not installed; then creates a fresh
 * directory $TMPDIR/mcu-<tag>-XXXXXX (/tmp without TMPDIR) into dir. 0, or -1. */
int mcu_workdir_create(char *dir, size_t n, const char *tag);
/* Removes dir and everything below it; 0, or -1. */
int mcu_workdir_remove(const char *dir);

/* Reads a whole file (a linked image) into malloc'ed memory; the test fails when it cannot. */
uint8_t *mcu_read_file(const char *path, size_t *size);
/* UPLOAD (SHA-256 announced) in chunks of the device's frame size, then LOAD_MODULE of an MCU
 * image; returns the module handle. The test fails, with the device's message, on any error. */
uint64_t mcu_upload_image(mcu_board *b, const char *name, const uint8_t *img, size_t size);

/* The deterministic KWS input of the model tests: n floats in (-2, 2). */
void mcu_kws_input(float *v, size_t n);

/* main() of a test taking FIRMWARE_DIR as its only argument: sets mcu_fw_dir (usage message and
 * 2 without it), then runs the cmocka group with setup and teardown. */
int mcu_test_main(int argc, char **argv, const struct CMUnitTest *tests, size_t n,
                  CMFixtureFunction setup, CMFixtureFunction teardown);

/* Runs `tether_exe ARGS...` (ap: strings up to a NULL) with stdout and stderr captured through
 * files in workdir into out_text/err_text (NUL-terminated, truncated to their sizes), echoes the
 * command and its output, and returns the exit code (128 when it did not exit). */
int mcu_cli_vrun(const char *tether_exe, const char *workdir, char *out_text, size_t out_n,
                 char *err_text, size_t err_n, const char *first, va_list ap);

#endif /* TETHER_TESTS_MCU_CLIENT_H */
