/* A hostile handler, written as a new user would, that tries to leave its worker: one attempt a
 * request, named by ?try=NAME (with ?pid=PID for a sibling worker and ?path=PATH for a file).
 * Answers one line: "NAME: allowed", "NAME: EPERM", "NAME: EACCES" (or another errno's name),
 * and what it saw where that says more. The escape suite (tests/integration/sandbox_test.cpp)
 * expects every attempt refused. */
#define _GNU_SOURCE
#include <csp/csp.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <netinet/in.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static const char *errno_name(int e) {
    switch (e) {
    case EPERM: return "EPERM";
    case EACCES: return "EACCES";
    case ENOENT: return "ENOENT";
    case ENOSYS: return "ENOSYS";
    case EINVAL: return "EINVAL";
    case EFAULT: return "EFAULT";
    case EBADF: return "EBADF";
    case ESRCH: return "ESRCH";
    case EXDEV: return "EXDEV";
    default: return "other";
    }
}

/* The outcome of a call that returns -1 and sets errno on failure. */
static int said(csp_reply *reply, const char *name, long result) {
    if (result >= 0)
        csp_reply_printf(reply, "%s: allowed\n", name);
    else
        csp_reply_printf(reply, "%s: %s\n", name, errno_name(errno));
    return 200;
}

static int open_file(csp_reply *reply, const char *name, const char *path, int flags) {
    const int fd = open(path, flags | O_CLOEXEC, 0644);
    const int saved = errno;
    if (fd >= 0) close(fd);
    errno = saved;
    return said(reply, name, fd);
}

static char *copy_arg(const csp_request *req, const char *name, char *out, size_t room) {
    csp_str value = csp_query_arg(req, name);
    if (!value.data || value.size >= room) return NULL;
    memcpy(out, value.data, value.size);
    out[value.size] = '\0';
    return out;
}

static int escape(const csp_request *req, csp_reply *reply) {
    char attempt[64], path[512], pid_text[16];
    if (!copy_arg(req, "try", attempt, sizeof attempt)) return 400;
    const char *file = copy_arg(req, "path", path, sizeof path);
    const pid_t sibling = copy_arg(req, "pid", pid_text, sizeof pid_text) ? (pid_t)atoi(pid_text) : 0;
    csp_reply_set_content_type(reply, "text/plain");
    char *const shell[] = {(char *)"sh", (char *)"-c", (char *)"true", NULL};

    if (!strcmp(attempt, "pid")) {
        csp_reply_printf(reply, "%d", (int)getpid());
        return 200;
    }
    if (!strcmp(attempt, "data_dir")) {
        /* Its own folder (csp_request_data_dir, 2.6): where it may keep files. */
        const csp_str folder = csp_request_data_dir(req);
        if (!folder.data) return said(reply, "data_dir (none)", -1);
        char note[600];
        snprintf(note, sizeof note, "%s/note", folder.data);
        const int fd = open(note, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        const int saved = errno;
        if (fd >= 0) {
            (void)!write(fd, "kept", 4);
            close(fd);
        }
        csp_reply_printf(reply, "%s ", folder.data);
        errno = saved;
        return said(reply, attempt, fd);
    }
    if (!strcmp(attempt, "execve")) return said(reply, attempt, execve("/bin/sh", shell, environ));
    if (!strcmp(attempt, "system")) {
        /* system() answers 127 as the status of a shell it could not start: the mark tells. */
        char command[600], mark[560];
        snprintf(mark, sizeof mark, "%s/system-ran-%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
        unlink(mark);
        snprintf(command, sizeof command, "touch %s", mark);
        (void)system(command);
        if (access(mark, F_OK) == 0) {
            unlink(mark);
            return said(reply, attempt, 0);
        }
        csp_reply_puts(reply, "system: the shell never ran\n");
        return 200;
    }
    if (!strcmp(attempt, "posix_spawn")) {
        pid_t child;
        const int error = posix_spawn(&child, "/bin/sh", NULL, NULL, shell, environ);
        if (!error) waitpid(child, NULL, 0);
        errno = error;
        return said(reply, attempt, error ? -1 : 0);
    }
    if (!strcmp(attempt, "fork_exec")) {
        /* fork is allowed (a handler may fork workers of its own); what the child runs is not. */
        const pid_t child = fork();
        if (child == 0) {
            execve("/bin/sh", shell, environ);
            _exit(errno == EPERM ? 42 : 43);
        }
        int status = 0;
        waitpid(child, &status, 0);
        errno = WIFEXITED(status) && WEXITSTATUS(status) == 42 ? EPERM : 0;
        return said(reply, attempt, errno ? -1 : 0);
    }
    if (!strcmp(attempt, "read") && file) return open_file(reply, attempt, file, O_RDONLY);
    if (!strcmp(attempt, "write") && file) return open_file(reply, attempt, file, O_WRONLY | O_CREAT | O_APPEND);
    if (!strcmp(attempt, "mkdir") && file) return said(reply, attempt, mkdir(file, 0755));
    if (!strcmp(attempt, "unlink") && file) return said(reply, attempt, unlink(file));
    if (!strcmp(attempt, "symlink_read") && file) {
        /* A link made where it may write, to a file it may not read: the rules judge the target. */
        char link_path[600];
        snprintf(link_path, sizeof link_path, "%s/escape-link-%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
                 (int)getpid());
        unlink(link_path);
        if (symlink(file, link_path) != 0) return said(reply, "symlink_read (making the link)", -1);
        const int fd = open(link_path, O_RDONLY | O_CLOEXEC);
        const int saved = errno;
        if (fd >= 0) close(fd);
        unlink(link_path);
        errno = saved;
        return said(reply, attempt, fd);
    }
    if ((!strcmp(attempt, "hardlink") || !strcmp(attempt, "rename_out")) && file) {
        /* Bring a file it may not read into a folder it may write: a link, or moving it there. */
        char target[600];
        snprintf(target, sizeof target, "%s/escape-moved-%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
        unlink(target);
        const int result = !strcmp(attempt, "hardlink") ? link(file, target) : rename(file, target);
        const int saved = errno;
        unlink(target);
        errno = saved;
        return said(reply, attempt, result);
    }
    if (!strcmp(attempt, "ptrace") && sibling)
        return said(reply, attempt, ptrace(PTRACE_ATTACH, sibling, NULL, NULL));
    if (!strcmp(attempt, "process_vm_readv") && sibling) {
        char byte;
        struct iovec local = {&byte, 1}, remote = {(void *)0x400000, 1};
        return said(reply, attempt, process_vm_readv(sibling, &local, 1, &remote, 1, 0));
    }
    if (!strcmp(attempt, "proc_mem") && sibling) {
        char mem[64];
        snprintf(mem, sizeof mem, "/proc/%d/mem", (int)sibling);
        return open_file(reply, attempt, mem, O_RDONLY);
    }
    if (!strcmp(attempt, "proc_environ") && sibling) {
        char environ_path[64];
        snprintf(environ_path, sizeof environ_path, "/proc/%d/environ", (int)sibling);
        return open_file(reply, attempt, environ_path, O_RDONLY);
    }
    if (!strcmp(attempt, "kill") && sibling) return said(reply, attempt, kill(sibling, SIGKILL));
    if (!strcmp(attempt, "mount")) {
        /* A file system type no kernel knows: allowed, the kernel itself would answer ENODEV. */
        return said(reply, attempt, mount("none", "/mnt", "cspd-no-such-fs", 0, NULL));
    }
    if (!strcmp(attempt, "unshare_user")) return said(reply, attempt, unshare(CLONE_NEWUSER));
    if (!strcmp(attempt, "unshare_net")) return said(reply, attempt, unshare(CLONE_NEWNET));
    if (!strcmp(attempt, "setns")) return said(reply, attempt, syscall(SYS_setns, 0, 0));
    if (!strcmp(attempt, "chroot")) return said(reply, attempt, chroot("/"));
    if (!strcmp(attempt, "bpf")) {
        union bpf_attr attr;
        memset(&attr, 0, sizeof attr);
        attr.map_type = BPF_MAP_TYPE_ARRAY;
        attr.key_size = 4;
        attr.value_size = 4;
        attr.max_entries = 1;
        const long fd = syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof attr);
        if (fd >= 0) close((int)fd);
        return said(reply, attempt, fd);
    }
    if (!strcmp(attempt, "raw_socket")) {
        const int fd = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP);
        if (fd >= 0) close(fd);
        return said(reply, attempt, fd);
    }
    if (!strcmp(attempt, "socket_family")) {
        char number[16];
        const int family = copy_arg(req, "family", number, sizeof number) ? atoi(number) : 0;
        const int type = copy_arg(req, "type", number, sizeof number) ? atoi(number) : SOCK_RAW;
        const int protocol = copy_arg(req, "protocol", number, sizeof number) ? atoi(number) : 0;
        const int fd = socket(family, type, protocol);
        if (fd >= 0) close(fd);
        return said(reply, attempt, fd);
    }
    if (!strcmp(attempt, "chmod") && file) return said(reply, attempt, chmod(file, 0644));
    if (!strcmp(attempt, "chown") && file) return said(reply, attempt, chown(file, 0, 0));
    if (!strcmp(attempt, "packet_socket")) {
        const int fd = socket(AF_PACKET, SOCK_RAW, 0);
        if (fd >= 0) close(fd);
        return said(reply, attempt, fd);
    }
    if (!strcmp(attempt, "keyctl")) return said(reply, attempt, syscall(SYS_add_key, "user", "escape", "x", 1, -3));
    if (!strcmp(attempt, "perf_event_open")) {
        struct perf_event_attr attr;
        memset(&attr, 0, sizeof attr);
        attr.size = sizeof attr;
        attr.type = PERF_TYPE_SOFTWARE;
        attr.config = PERF_COUNT_SW_CPU_CLOCK;
        const long fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
        if (fd >= 0) close((int)fd);
        return said(reply, attempt, fd);
    }
    if (!strcmp(attempt, "userfaultfd")) {
        const long fd = syscall(SYS_userfaultfd, O_CLOEXEC);
        if (fd >= 0) close((int)fd);
        return said(reply, attempt, fd);
    }
    if (!strcmp(attempt, "personality")) return said(reply, attempt, personality(0xffffffff)); /* a query */
    if (!strcmp(attempt, "init_module")) return said(reply, attempt, syscall(SYS_init_module, "", 0, ""));
    if (!strcmp(attempt, "kexec_load")) return said(reply, attempt, syscall(SYS_kexec_load, 0, 0, NULL, 0xdead0000ul));
    if (!strcmp(attempt, "io_uring_setup")) return said(reply, attempt, syscall(SYS_io_uring_setup, 1, NULL));
    if (!strcmp(attempt, "clone_newpid")) {
        /* Straight to the kernel, as a handler that knows the filter reads clone's flags would. */
        const long child = syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, 0, 0, 0, 0);
        if (child == 0) _exit(0);
        if (child > 0) waitpid((pid_t)child, NULL, 0);
        return said(reply, attempt, child);
    }
    if (!strcmp(attempt, "silence_sigsys")) {
        struct sigaction quiet;
        memset(&quiet, 0, sizeof quiet);
        quiet.sa_handler = SIG_IGN;
        return said(reply, attempt, sigaction(SIGSYS, &quiet, NULL));
    }
#if defined(__x86_64__)
    if (!strcmp(attempt, "int80")) {
        long result;
        /* i386's setuid(0) through int $0x80, where x86_64's numbers mean other calls. */
        __asm__ volatile("int $0x80" : "=a"(result) : "a"(23L), "b"(0L) : "memory");
        if (result < 0) {
            errno = (int)-result;
            return said(reply, attempt, -1);
        }
        return said(reply, attempt, result);
    }
#endif
    if (!strcmp(attempt, "rwx_mmap")) {
        /* Code written, then run: allowed in a worker (JITs need it); reported, not an escape. */
        unsigned char *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (page == MAP_FAILED) return said(reply, attempt, -1);
        page[0] = 0xc3; /* ret, on x86_64 */
#if defined(__x86_64__)
        void (*run)(void);
        memcpy(&run, &page, sizeof run); /* ISO C has no cast from data to code */
        run();
#endif
        munmap(page, 4096);
        return said(reply, attempt, 0);
    }
    csp_reply_printf(reply, "%s: no such attempt\n", attempt);
    return 404;
}

/* Init runs first in the vetting process, whose sandbox is the workers': with "vetting = execve"
 * in escape.conf, it tries to start a shell there and says what happened (csp_init_log). */
static int escape_init(const csp_init_context *ctx, void **state) {
    (void)state;
    const csp_str vetting = csp_config(ctx, "vetting");
    if (ctx->worker_index == CSP_VETTING && vetting.data && vetting.size == 6 && !memcmp(vetting.data, "execve", 6)) {
        char *const shell[] = {(char *)"sh", (char *)"-c", (char *)"true", NULL};
        const int result = execve("/bin/sh", shell, environ);
        csp_init_log(ctx, CSP_LOG_WARN, "escape init while vetted: execve %s",
                     result < 0 ? errno_name(errno) : "allowed");
    }
    return 0;
}

CSP_HANDLER_WITH_CONTEXT(escape, escape_init, NULL)
