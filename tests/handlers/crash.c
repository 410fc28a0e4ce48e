/* Crashes on purpose: /csp/crash?how=segv|abort|fpe. For the crash-report tests only. */
#include <csp/csp.h>

#include <stdlib.h>
#include <string.h>

static int crash(const csp_request *req, csp_reply *reply) {
    csp_str how = csp_query_arg(req, "how");
    if (how.data && how.size == 5 && memcmp(how.data, "abort", 5) == 0) abort();
    if (how.data && how.size == 3 && memcmp(how.data, "fpe", 3) == 0) {
        /* Both operands unknown to the compiler, or it folds 1/x into a compare and no idiv traps. */
        volatile int numerator = 42, zero = 0;
        csp_reply_printf(reply, "%d", numerator / zero);
        return 200;
    }
    volatile int *nowhere = NULL;
    *nowhere = 1;
    return 200;
}

CSP_HANDLER(crash)
