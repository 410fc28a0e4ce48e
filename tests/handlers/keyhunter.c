/* A hostile handler: it looks for a TLS private key everywhere its worker can reach.
 *   X-Needles: hex,hex,...   byte strings to find in every readable mapping (read with
 *                            process_vm_readv: /proc/self/mem is closed to a non-dumpable worker)
 *   X-Files: path:path:...   files to open for reading
 * Answers one line a needle ("needle N: found at ..." or "needle N: absent"), one a file
 * ("file PATH: opened" or "file PATH: refused (errno)"), and how much memory it read.
 * The needles are kept masked (each byte ^ 0x5a) and compared without unmasking them, so the
 * search never puts the bytes it looks for into the memory it searches. */
#define _GNU_SOURCE  /* process_vm_readv */
#include <csp/csp.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define MASK 0x5a
#define MAX_NEEDLES 16
#define CHUNK (1u << 20)
/* ASan's shadow and the like: reserved, never holding a key. */
#define SKIP_MAPPINGS_OVER (512ul << 20)

struct needle {
    unsigned char masked[4096];
    size_t size;
    unsigned long found_at;
    int found;
};

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static size_t parse_needles(csp_str text, struct needle *needles) {
    size_t count = 0, i = 0;
    while (i < text.size && count < MAX_NEEDLES) {
        struct needle *n = &needles[count];
        n->size = 0;
        n->found = 0;
        while (i + 1 < text.size && text.data[i] != ',' && n->size < sizeof n->masked) {
            const int hi = hex_value(text.data[i]), lo = hex_value(text.data[i + 1]);
            if (hi < 0 || lo < 0) break;
            n->masked[n->size++] = (unsigned char)(((hi << 4) | lo) ^ MASK);
            i += 2;
        }
        while (i < text.size && text.data[i] != ',') ++i;
        ++i;
        if (n->size) ++count;
    }
    return count;
}

static void search(const unsigned char *chunk, size_t size, unsigned long base, struct needle *n) {
    if (n->found || n->size == 0 || size < n->size) return;
    const unsigned char first = (unsigned char)(n->masked[0] ^ MASK);
    const unsigned char *at = chunk;
    const unsigned char *end = chunk + size - n->size + 1;
    while (at < end && (at = memchr(at, first, (size_t)(end - at))) != NULL) {
        size_t k = 1;
        while (k < n->size && (unsigned char)(at[k] ^ MASK) == n->masked[k]) ++k;
        if (k == n->size) {
            n->found = 1;
            n->found_at = base + (unsigned long)(at - chunk);
            return;
        }
        ++at;
    }
}

static int hunt(const csp_request *req, csp_reply *reply) {
    static struct needle needles[MAX_NEEDLES];
    const size_t count = parse_needles(csp_header(req, "X-Needles"), needles);
    unsigned char *chunk = malloc(CHUNK + 4096);
    FILE *maps = fopen("/proc/self/maps", "r");
    if (!chunk || !maps) {
        csp_reply_printf(reply, "cannot look: %s\n", strerror(errno));
        return 500;
    }
    const int mem = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
    csp_reply_printf(reply, "/proc/self/mem: %s\n", mem >= 0 ? "opened" : strerror(errno));
    if (mem >= 0) close(mem);
    unsigned long scanned = 0, skipped = 0;
    char line[512];
    while (fgets(line, sizeof line, maps)) {
        unsigned long start, end;
        char perms[5];
        if (sscanf(line, "%lx-%lx %4s", &start, &end, perms) != 3 || perms[0] != 'r') continue;
        if (strstr(line, "[vvar]") || end - start > SKIP_MAPPINGS_OVER) {
            skipped += end - start;
            continue;
        }
        /* Chunks overlap by the longest needle, so nothing is missed at a seam. */
        for (unsigned long at = start; at < end; at += CHUNK) {
            const size_t want = (size_t)((end - at) < CHUNK + 4096 ? (end - at) : CHUNK + 4096);
            struct iovec local = {chunk, want}, remote = {(void *)at, want};
            const ssize_t got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
            if (got <= 0) break;
            scanned += (unsigned long)got;
            for (size_t i = 0; i < count; ++i) search(chunk, (size_t)got, at, &needles[i]);
        }
    }
    fclose(maps);
    free(chunk);
    for (size_t i = 0; i < count; ++i) {
        if (needles[i].found)
            csp_reply_printf(reply, "needle %zu: found at %lx\n", i, needles[i].found_at);
        else
            csp_reply_printf(reply, "needle %zu: absent\n", i);
    }
    const csp_str files = csp_header(req, "X-Files");
    size_t i = 0;
    while (i < files.size) {
        char path[1024];
        size_t n = 0;
        while (i < files.size && files.data[i] != ':' && n + 1 < sizeof path) path[n++] = files.data[i++];
        path[n] = '\0';
        ++i;
        if (n == 0) continue;
        const int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            csp_reply_printf(reply, "file %s: opened\n", path);
            close(fd);
        } else {
            csp_reply_printf(reply, "file %s: refused (%s)\n", path, strerror(errno));
        }
    }
    csp_reply_printf(reply, "scanned %lu bytes, skipped %lu\nuid %d euid %d\n", scanned, skipped, (int)getuid(),
                     (int)geteuid());
    return 200;
}

CSP_BLOCKING_HANDLER(hunt)
