/* mf_test.h: what the memfabric test programs share: a free port for a config store, the
 * watchdog of a job of forked ranks (it kills them and ends the job when it hangs), and
 * out-of-band messages between processes (over pipes, or files of a folder both sides see). */
#ifndef SHMEM_TESTS_MEMFABRIC_MF_TEST_H
#define SHMEM_TESTS_MEMFABRIC_MF_TEST_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/* A port for a config store on 127.0.0.1, free when probed: a random one below the kernel's
 * range of ephemeral ports (ip_local_port_range). A port the kernel hands out itself (bind to
 * port 0) may be given to any process's outgoing connection a moment later, and a store that
 * cannot bind then finds nothing listening there. */
static unsigned free_port(void) {
    unsigned lo = 32768, hi = 60999;
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    if (f != NULL) {
        if (fscanf(f, "%u %u", &lo, &hi) != 2) lo = 32768;
        fclose(f);
    }
    unsigned first = 10000, last = lo > first + 1000 ? lo - 1 : 30000;
    unsigned seed = (unsigned)getpid() * 2654435761u ^ (unsigned)time(NULL);
    for (int tries = 0; tries < 1000; tries++) {
        seed = seed * 1103515245u + 12345u;
        unsigned port = first + (seed >> 8) % (last - first + 1);
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a;
        memset(&a, 0, sizeof a);
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons((uint16_t)port);
        int ok = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
        if (fd >= 0) close(fd);
        if (ok) return port;
    }
    fprintf(stderr, "free_port: no free port on 127.0.0.1 in %u..%u\n", first, last);
    exit(2);
}

/* Out-of-band messages between processes: fixed-size records (128 bytes). */
typedef struct {
    uint64_t a[16];
} msg_t;

static inline void send_msg(int fd, const msg_t *m) {
    if (write(fd, m, sizeof *m) != (ssize_t)sizeof *m) {
        perror("write pipe");
        _exit(2);
    }
}

/* 0 when the writer closed its end first. */
static inline int recv_msg(int fd, msg_t *m) {
    size_t got = 0;
    while (got < sizeof *m) {
        ssize_t n = read(fd, (char *)m + got, sizeof *m - got);
        if (n <= 0) {
            return 0;
        }
        got += (size_t)n;
    }
    return 1;
}

/* For sides started apart (two namespaces, as two nodes): `name` in folder `dir`, whole when it
 * appears (written aside, then renamed). */
static inline void put_file(const char *dir, const char *name, const msg_t *m) {
    char tmp[512], path[512];
    snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, name);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(tmp, "wb");
    if (f == NULL || fwrite(m, sizeof *m, 1, f) != 1 || fclose(f) != 0 || rename(tmp, path) != 0) {
        perror(path);
        exit(2);
    }
}

/* Waits (up to 60 s) for the other side's file `name`; 0 (said on stderr) when it never came. */
static inline int get_file(const char *dir, const char *name, msg_t *m) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    for (int i = 0; i < 6000; i++) {
        FILE *f = fopen(path, "rb");
        if (f != NULL) {
            size_t n = fread(m, sizeof *m, 1, f);
            fclose(f);
            if (n == 1) {
                return 1;
            }
        }
        usleep(10000);
    }
    fprintf(stderr, "no %s after 60 s\n", path);
    return 0;
}

#ifdef MF_TEST_MAX_RANKS
/* The job's ranks, for the watchdog; the program sets them as it forks. */
static pid_t children[MF_TEST_MAX_RANKS];
static uint32_t n_children;

/* SIGALRM's handler: the job hangs; kill its ranks and end with status 3. */
static void watchdog(int sig) {
    (void)sig;
    static const char msg[] = "watchdog: the job hangs; killing its ranks\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    for (uint32_t i = 0; i < n_children; i++) {
        if (children[i] > 0) {
            kill(children[i], SIGKILL);
        }
    }
    _exit(3);
}
#endif

#endif
