/* Calls a function no library defines: built without -z defs, it links, and dlopen (RTLD_NOW)
 * refuses it with the private copy's path in the reason. */
#include <csp/csp.h>

extern int cspd_test_no_such_function(void);

static int unresolved(const csp_request *req, csp_reply *reply) {
    (void)req;
    (void)reply;
    return cspd_test_no_such_function();
}

CSP_HANDLER(unresolved)
