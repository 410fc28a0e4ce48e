/* For bench/cache.py: a small dynamic page -- a 40-row HTML table, each row formatted from the
 * query and a little arithmetic, about 3 KiB -- built on every call, or with -DPAGE_CACHED kept
 * in the reply cache for a minute (csp_reply_cache), so later GETs never reach this code. */
#include <csp/csp.h>

static int page(const csp_request *req, csp_reply *reply) {
    csp_str who = csp_form_arg(req, "who");
    unsigned long seed = 5381;
    for (size_t i = 0; who.data && i < who.size; ++i) seed = seed * 33 + (unsigned char)who.data[i];
    csp_reply_puts(reply, "<!doctype html><html><head><title>Report</title></head><body><table>\n");
    for (int row = 0; row < 40; ++row) {
        seed = seed * 6364136223846793005ul + 1442695040888963407ul;
        csp_reply_printf(reply, "<tr><td>%d</td><td>", row);
        if (who.data) csp_reply_append_html(reply, who.data, who.size);
        csp_reply_printf(reply, "</td><td>%lu</td><td>%.3f</td></tr>\n", seed >> 40, (double)(seed >> 44) / 1000.0);
    }
    csp_reply_puts(reply, "</table></body></html>\n");
#ifdef PAGE_CACHED
    csp_reply_cache(reply, 60);
#endif
    return 200;
}

CSP_HANDLER(page)
