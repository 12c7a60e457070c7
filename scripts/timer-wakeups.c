// How late a SCHED_FIFO thread's timed sleeps end on this machine, alone or with a SCHED_IDLE
// "keeper" thread on the same CPU that wakes (or spins) before each deadline, as the shaper's
// keeper does (netem/src/daemon_keeper.rs). Prints one markdown table row.
//
//   gcc -O2 -o /tmp/timer-wakeups scripts/timer-wakeups.c -lpthread
//   sudo /tmp/timer-wakeups N MIN_US MAX_US WINDOW_US HOP_US
//
// N sleeps of MIN_US..MAX_US (uniform, seed 1). WINDOW_US 0: no keeper. Otherwise the keeper
// runs from WINDOW_US before each deadline to 100 µs after it: HOP_US 0 spins, HOP_US below the
// window wakes every HOP_US, HOP_US at or above the window wakes once.
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void sleep_until(long long t) {
    struct timespec ts = {t / 1000000000LL, t % 1000000000LL};
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

static _Atomic long long spin_from = -1, spin_until = -1;
static long long hop_ns;
static int cpu;

static void *keeper(void *arg) {
    (void)arg;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    struct sched_param p = {0};
    sched_setscheduler(0, SCHED_IDLE, &p);
    for (;;) {
        long long from = spin_from, until = spin_until, n = now_ns();
        if (from < 0 || n >= until) { usleep(50); continue; }
        if (n < from) { sleep_until(from); continue; }
        while (now_ns() < spin_until && spin_from == from) {
            if (hop_ns == 0) {
                __builtin_ia32_pause();
            } else {
                long long t = now_ns() + hop_ns;
                sleep_until(t < spin_until ? t : spin_until);
            }
        }
    }
    return NULL;
}

static int cmp(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: %s N MIN_US MAX_US WINDOW_US HOP_US\n", argv[0]);
        return 2;
    }
    int n = atoi(argv[1]);
    long long min_ns = atoll(argv[2]) * 1000, span_ns = atoll(argv[3]) * 1000 - min_ns;
    long long window_ns = atoll(argv[4]) * 1000;
    hop_ns = atoll(argv[5]) * 1000;
    if (n <= 0 || span_ns <= 0) {
        fprintf(stderr, "N must be positive and MAX_US above MIN_US\n");
        return 2;
    }
    cpu = sched_getcpu();
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof set, &set);
    prctl(PR_SET_TIMERSLACK, 1);
    struct sched_param p = {10};
    if (sched_setscheduler(0, SCHED_FIFO, &p) != 0) perror("SCHED_FIFO (run as root)");
    pthread_t th;
    if (window_ns > 0) pthread_create(&th, NULL, keeper, NULL);
    long long *late = malloc(n * sizeof *late);
    srand(1);
    struct timespec cpu0, cpu1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu0);
    long long start = now_ns();
    for (int i = 0; i < n; i++) {
        long long due = now_ns() + min_ns + rand() % span_ns;
        if (window_ns > 0) { spin_until = due + 100000; spin_from = due - window_ns; }
        sleep_until(due);
        late[i] = now_ns() - due;
    }
    double seconds = (now_ns() - start) / 1e9;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu1);
    double cores = ((cpu1.tv_sec - cpu0.tv_sec) + (cpu1.tv_nsec - cpu0.tv_nsec) / 1e9) / seconds;
    qsort(late, n, sizeof *late, cmp);
    int over200 = 0;
    for (int i = 0; i < n; i++) over200 += late[i] >= 200000;
    printf("| %s–%s µs | %s | %s | %d | %lld | %lld | %lld | %lld | %d | %.3f |\n", argv[2], argv[3],
           window_ns ? argv[4] : "none", window_ns ? (hop_ns == 0 ? "spin" : argv[5]) : "—", n,
           late[n / 2] / 1000, late[n * 99 / 100] / 1000, late[n * 999 / 1000] / 1000,
           late[n - 1] / 1000, over200, cores);
    return 0;
}
