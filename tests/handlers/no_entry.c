/* A valid shared object without the csp_handler symbol: must be refused. */
int not_a_handler(void) { return 42; }
