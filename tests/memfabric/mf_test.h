/* mf_test.h: what the memfabric test programs share: a free port for a config store, and the
 * watchdog of a job of forked ranks (it kills them and ends the job when it hangs). */
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
#include <unistd.h>

/* A port the system picks on 127.0.0.1, free again on return (another process could take it,
 * rarely). */
static unsigned free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        perror("bind 127.0.0.1:0");
        exit(2);
    }
    close(fd);
    return ntohs(a.sin_port);
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
