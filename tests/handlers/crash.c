/* Misbehaves on purpose: /csp/crash?how=segv|abort|fpe|loop; any other value answers
 * "crash vN" (N from CRASH_VERSION, so that two builds are two versions); built with
 * CRASH_ALWAYS, every call faults. For the
 * crash-report, quarantine and watchdog tests only. */
#include <csp/csp.h>

#include <stdlib.h>
#include <string.h>

#ifndef CRASH_VERSION
#define CRASH_VERSION 1
#endif

static int is(csp_str value, const char *word) {
    return value.data && value.size == strlen(word) && memcmp(value.data, word, value.size) == 0;
}

static int crash(const csp_request *req, csp_reply *reply) {
    csp_str how = csp_query_arg(req, "how");
    if (is(how, "abort")) abort();
    if (is(how, "fpe")) {
        /* Both operands unknown to the compiler, or it folds 1/x into a compare and no idiv traps. */
        volatile int numerator = 42, zero = 0;
        csp_reply_printf(reply, "%d", numerator / zero);
        return 200;
    }
    if (is(how, "loop")) {
        volatile unsigned long spins = 0;
        for (;;) ++spins;  /* never returns: for the watchdog */
    }
#ifdef CRASH_ALWAYS
    how.data = "segv", how.size = 4; /* a version that passes vetting and crashes on every call */
#endif
    if (is(how, "segv")) {
        volatile int *nowhere = NULL;
        *nowhere = 1;
    }
    csp_reply_printf(reply, "crash v%d", CRASH_VERSION);
    return 200;
}

CSP_HANDLER(crash)
