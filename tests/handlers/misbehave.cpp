// Handlers that misbehave outside a request, one way each (MISBEHAVE selects it), for the
// isolation tests:
//   1 ctor_fault     a static constructor dereferences null (at load, in every process)
//   2 init_hang      init never returns, and burns its core meanwhile
//   3 init_fault     init dereferences null
//   4 exit_call      a call ends the process: ?how=exit (default), _exit or quick_exit
//   5 thread_fault   a call starts a thread of its own that faults a moment later
//   6 cleanup_fault  cleanup dereferences null, once a request was served (so vetting passes)
//   7 leak           each call keeps ?mb=N MiB (default 8), touched, never freed
//   8 exit_blocking  as exit_call, from a blocking handler (its call runs on the pool's thread)
//   9 init_thread_fault  init starts a thread of its own that faults 1.5 s later
// Otherwise each answers "MODE ok".
#include <csp/csp.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

[[maybe_unused]] int* volatile nowhere = nullptr;  // some modes fault through it

#if MISBEHAVE == 1
struct FaultsWhenConstructed {
    FaultsWhenConstructed() { *nowhere = 1; }
} faults_at_load;
#endif

std::atomic<bool> served{false};

[[maybe_unused]] int arg(const csp_request* req, const char* name, int fallback) {
    csp_str v = csp_query_arg(req, name);
    return v.data && v.size ? std::atoi(std::string(v.data, v.size).c_str()) : fallback;
}

[[maybe_unused]] bool is(csp_str s, const char* text) { return s.data && s.size == std::strlen(text) && !std::memcmp(s.data, text, s.size); }

int handle([[maybe_unused]] const csp_request* req, csp_reply* reply) {
    served = true;
#if MISBEHAVE == 4 || MISBEHAVE == 8
    csp_str how = csp_query_arg(req, "how");
    if (is(how, "_exit")) _exit(3);
    if (is(how, "quick_exit")) std::quick_exit(4);
    std::exit(5);
#elif MISBEHAVE == 5
    std::thread([] {
        usleep(20000);
        *nowhere = 5;
    }).detach();
#elif MISBEHAVE == 7
    static std::vector<char*> kept;
    const std::size_t size = std::size_t(arg(req, "mb", 8)) << 20;
    char* block = static_cast<char*>(std::malloc(size));
    if (!block) return 503;
    std::memset(block, 1, size);
    kept.push_back(block);
#endif
    csp_reply_printf(reply, "%d ok\n", MISBEHAVE);
    return 200;
}

int init(void** state) {
    (void)state;
#if MISBEHAVE == 2
    std::atomic<unsigned long> spin{0};
    for (;;) spin.fetch_add(1, std::memory_order_relaxed);
#elif MISBEHAVE == 3
    *nowhere = 3;
#elif MISBEHAVE == 9
    // init returns well, and the thread it started faults 1.5 s later: every worker that loads
    // this version dies, whatever it serves. (Later than a vetting process lives, even under the
    // sanitizers, whose exit is slow: one still alive then would fence the version instead.)
    // init waits until the thread sleeps in libc: a vetting process unloads the version when init
    // returns, and a thread not yet started would then run unmapped code in the vetting process
    // (which fenced the version once under load, and the case tested was lost).
    static std::atomic<bool> started{false};
    std::thread([] {
        started = true;
        usleep(1500000);
        *nowhere = 9;
    }).detach();
    while (!started) usleep(1000);
    usleep(20000);
#endif
    return 0;
}

void cleanup(void* state) {
    (void)state;
#if MISBEHAVE == 6
    if (served) *nowhere = 6;
#endif
}

}  // namespace

#if MISBEHAVE == 8
CSP_BLOCKING_HANDLER_WITH_HOOKS(handle, init, cleanup)
#else
CSP_HANDLER_WITH_HOOKS(handle, init, cleanup)
#endif
