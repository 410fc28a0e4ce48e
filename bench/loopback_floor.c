// What one small write to each of N loopback TCP sockets costs the writer, in µs: the kernel's
// floor under any server's fan-out on this machine (loopback runs the receiver's TCP processing
// inside the sender's write). Usage: loopback_floor N ROUNDS SIZE. Prints one JSON line.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(int argc, char** argv) {
    const int n = argc > 1 ? atoi(argv[1]) : 4000, rounds = argc > 2 ? atoi(argv[2]) : 5;
    const int size = argc > 3 ? atoi(argv[3]) : 50;
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in at = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof at;
    if (bind(listener, (struct sockaddr*)&at, sizeof at) || listen(listener, 4096) ||
        getsockname(listener, (struct sockaddr*)&at, &len)) return perror("listen"), 1;
    int* writers = calloc(n, sizeof(int));
    int* readers = calloc(n, sizeof(int));
    for (int i = 0; i < n; ++i) {
        readers[i] = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(readers[i], (struct sockaddr*)&at, sizeof at)) return perror("connect"), 1;
        writers[i] = accept(listener, NULL, NULL);
        if (writers[i] < 0) return perror("accept"), 1;
        int one = 1;
        setsockopt(writers[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    char message[4096], sink[65536];
    memset(message, 'x', sizeof message);
    double best = 1e18, total = 0;
    for (int r = 0; r < rounds; ++r) {
        const double t0 = now_us();
        for (int i = 0; i < n; ++i)
            if (write(writers[i], message, size) != size) return perror("write"), 1;
        const double took = now_us() - t0;
        total += took;
        if (took < best) best = took;
        for (int i = 0; i < n; ++i)
            if (read(readers[i], sink, sizeof sink) <= 0) return perror("read"), 1;
    }
    printf("{\"sockets\": %d, \"bytes\": %d, \"us_per_write_best\": %.2f, \"us_per_write_mean\": %.2f}\n", n, size,
           best / n, total / rounds / n);
    return 0;
}
