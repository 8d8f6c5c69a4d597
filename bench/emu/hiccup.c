// How much of its time a real-time thread on this machine does not get, whatever it does: a
// SCHED_FIFO thread reads CLOCK_MONOTONIC in a tight loop and counts every gap between two
// readings longer than a threshold (default 20 µs), as in cyclictest's or jHiccup's idea. It
// spins for 200 ms and sleeps for 50 ms in turn (a real-time thread spinning longer than
// kernel.sched_rt_runtime_us would be throttled, which is not what is measured here); gaps that
// span its own sleeps are not counted. Per gap it also reads the thread's CPU time and its
// involuntary context switches: a gap in which the CPU time stood still and no switch
// happened is time the hypervisor took from the vCPU (steal), one with a switch the guest's
// own scheduler (docs/performance.md, "Where release lateness comes from").
//
//   cc -O2 -o hiccup bench/emu/hiccup.c && sudo ./hiccup [SECONDS] [THRESHOLD_US] [CPU]
//
// Prints: gaps, total time in gaps (ms), the longest gap (µs), how many gaps were > 100 µs and
// > 1 ms, the gaps' time with a context switch (ms), and /proc/stat's steal over the run (ms).
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static uint64_t ns(clockid_t c) {
	struct timespec t;
	clock_gettime(c, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static long nivcsw(void) {
	struct rusage r;
	getrusage(RUSAGE_THREAD, &r);
	return r.ru_nivcsw;
}

static long steal_ms(void) {
	FILE *f = fopen("/proc/stat", "r");
	unsigned long long v[8] = {0};
	if (!f || fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
			 &v[3], &v[4], &v[5], &v[6], &v[7]) != 8) {
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	return (long)(v[7] * 1000 / sysconf(_SC_CLK_TCK));
}

int main(int argc, char **argv) {
	double secs = argc > 1 ? atof(argv[1]) : 10;
	uint64_t thr = (argc > 2 ? atof(argv[2]) : 20) * 1000;
	if (argc > 3) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(atoi(argv[3]), &set);
		if (sched_setaffinity(0, sizeof set, &set))
			perror("sched_setaffinity");
	}
	struct sched_param p = {.sched_priority = 10};
	if (sched_setscheduler(0, SCHED_FIFO, &p)) {
		perror("sched_setscheduler (SCHED_FIFO needs root)");
		return 1;
	}
	uint64_t gaps = 0, total = 0, max = 0, over100 = 0, over1ms = 0, switched = 0;
	long steal0 = steal_ms();
	uint64_t end = ns(CLOCK_MONOTONIC) + (uint64_t)(secs * 1e9);
	while (ns(CLOCK_MONOTONIC) < end) {
		uint64_t burst_end = ns(CLOCK_MONOTONIC) + 200000000u;
		uint64_t prev = ns(CLOCK_MONOTONIC);
		long cs_prev = nivcsw();
		while (prev < burst_end) {
			uint64_t now = ns(CLOCK_MONOTONIC);
			uint64_t gap = now - prev;
			if (gap > thr) {
				gaps++;
				total += gap;
				if (gap > max)
					max = gap;
				over100 += gap > 100000;
				over1ms += gap > 1000000;
				long cs = nivcsw();
				if (cs != cs_prev)
					switched += gap;
				cs_prev = cs;
				now = ns(CLOCK_MONOTONIC);
			}
			prev = now;
		}
		usleep(50000);
	}
	printf("gaps %llu  in gaps %.1f ms  max %.0f us  >100us %llu  >1ms %llu  with a switch %.1f ms  "
	       "steal %ld ms\n",
	       (unsigned long long)gaps, total / 1e6, max / 1e3, (unsigned long long)over100,
	       (unsigned long long)over1ms, switched / 1e6, steal_ms() - steal0);
	return 0;
}
