/*
 * tether_log: bounded formatting in front of the platform's log hook.
 * Invariant: never allocates; lines longer than TETHER_LOG_LINE_MAX are truncated.
 */
#include "tether/crt/error.h"
#include "tether/crt/platform.h"

#define TETHER_LOG_LINE_MAX 160

static tether_log_level log_threshold = TETHER_LOG_INFO;

void tether_log_set_level(tether_log_level level) {
    log_threshold = level;
}

tether_log_level tether_log_get_level(void) {
    return log_threshold;
}

void tether_log(tether_log_level level, const char *fmt, ...) {
    if (level > log_threshold) {
        return;
    }
    char line[TETHER_LOG_LINE_MAX];
    va_list ap;
    va_start(ap, fmt);
    tether_vformat(line, sizeof line, fmt, ap);
    va_end(ap);
    tether_platform_log(level, line);
}
