// What one timed wake-up of an event loop costs in CPU on this machine, with the wait's end set
// two ways: a CLOCK_MONOTONIC timerfd in the epoll set, re-armed (timerfd_settime) before each
// wait, as the shaper did until it switched; or epoll_pwait2's own nanosecond timeout, as the
// shaper waits now (netem/src/daemon_sys.rs, `Epoll::wait`). Prints one markdown table row.
//
//   gcc -O2 -o /tmp/wait-cost scripts/wait-cost.c
//   sudo /tmp/wait-cost MODE GAP_US SECONDS
//
// MODE timerfd or pwait2. The loop runs at SCHED_FIFO 10 with a timer slack of 1 ns, as the
// shaper does, and wakes every GAP_US. CPU is the process's user + system time (getrusage);
// lateness is how long after its deadline each wait returned.
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000ull + t.tv_nsec;
}

static double cpu_seconds(void) {
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return r.ru_utime.tv_sec + r.ru_utime.tv_usec / 1e6 + r.ru_stime.tv_sec +
           r.ru_stime.tv_usec / 1e6;
}

int main(int argc, char **argv) {
    if (argc != 4 || (strcmp(argv[1], "timerfd") && strcmp(argv[1], "pwait2"))) {
        fprintf(stderr, "usage: %s timerfd|pwait2 GAP_US SECONDS\n", argv[0]);
        return 2;
    }
    int timerfd_mode = strcmp(argv[1], "timerfd") == 0;
    uint64_t gap = strtoull(argv[2], NULL, 10) * 1000;
    double seconds = atof(argv[3]);
    if (gap == 0 || seconds <= 0) {
        fprintf(stderr, "GAP_US and SECONDS must be positive\n");
        return 2;
    }
    prctl(PR_SET_TIMERSLACK, 1);
    struct sched_param param = {.sched_priority = 10};
    // Outside real-time scheduling the kernel gives a timed epoll wait slack (a timerfd none),
    // which would bias the comparison.
    if (sched_setscheduler(0, SCHED_FIFO, &param) != 0) {
        perror("SCHED_FIFO (run as root)");
        return 1;
    }
    int ep = epoll_create1(0);
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 0}, events[8];
    if (ep < 0 || tfd < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev) != 0) {
        perror("epoll/timerfd");
        return 1;
    }

    uint64_t start = now_ns(), end = start + (uint64_t)(seconds * 1e9), next = start + gap;
    uint64_t wakeups = 0;
    double late_ns = 0, cpu0 = cpu_seconds();
    while (now_ns() < end) {
        if (timerfd_mode) {
            struct itimerspec spec = {0};
            spec.it_value.tv_sec = next / 1000000000ull;
            spec.it_value.tv_nsec = next % 1000000000ull;
            if (timerfd_settime(tfd, TFD_TIMER_ABSTIME, &spec, NULL) != 0 ||
                epoll_wait(ep, events, 8, -1) < 0) {
                perror("timerfd_settime/epoll_wait");
                return 1;
            }
        } else {
            uint64_t t = now_ns(), rel = next > t ? next - t : 0;
            struct timespec timeout = {rel / 1000000000ull, rel % 1000000000ull};
            if (syscall(SYS_epoll_pwait2, ep, events, 8, &timeout, NULL, 0) < 0) {
                perror("epoll_pwait2");
                return 1;
            }
        }
        uint64_t t = now_ns();
        late_ns += (double)t - (double)next;
        wakeups++;
        next += gap;
        if (next < t) next = t + gap;
    }
    double elapsed = (now_ns() - start) / 1e9, cpu = cpu_seconds() - cpu0;
    printf("| %s | %llu | %.0f | %.4f | %.1f | %.1f |\n", argv[1],
           (unsigned long long)(gap / 1000), wakeups / elapsed, cpu / elapsed,
           cpu / wakeups * 1e6, late_ns / wakeups / 1e3);
    return 0;
}
