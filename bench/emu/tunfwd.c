/*
 * tunfwd: the bare TUN-to-TUN forwarder satpep emu is measured against (docs/performance.md,
 * "Emulator"). Single-threaded, like the emulator's loop: two TUN devices, one ppoll, each
 * packet read is held for a fixed delay in a FIFO per direction and then written to the other
 * device. No rate, no queue limit beyond the FIFO's size, no loss, no copies besides the
 * kernel's and one into the FIFO: the ceiling of a user-space forwarder on this machine.
 *
 *   tunfwd [-o] [-d MS] DEV_A DEV_B
 *
 * -o: IFF_VNET_HDR with checksum and TSO offloads on both devices; packets (super-packets up to
 *     64 KB with their virtio_net_hdr) pass through untouched.
 * -d: one-way delay in milliseconds (default 0).
 * With a delay it also measures release lateness as satpep emu does: how long after its due
 * instant each packet was released, the instant being the pass's clock reading (taken before
 * its writes), weighted by the wire segments a packet carries (a super-packet of 45 segments
 * counts 45), in 1 µs bins; p50, p99 and max are printed with the counters.
 * The devices are created in the caller's namespace (move them with `ip link set DEV netns NS`);
 * on SIGINT/SIGTERM it prints its counters and exits.
 *
 * Build: cc -O2 -o tunfwd tunfwd.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define RING_BYTES (1UL << 30) /* per direction: 250 ms at 30 Gb/s */
#define MAX_PKT (65536 + 16)
#define READS_PER_PASS 64

struct rec { uint64_t due; uint32_t len; uint32_t pad; };

struct ring {
	unsigned char *buf;
	size_t head, tail; /* byte offsets: write at head, read at tail */
	size_t used;
};

#define LATE_BINS 1000000 /* 1 µs bins up to 1 s; later ones go to the last */

static uint64_t late_hist[LATE_BINS];
static uint64_t late_max_ns, late_total;

/* Wire segments a packet read from the device stands for (a super-packet: its payload over
 * the segment size; a header-only one: 1). Only the weight of a histogram entry. */
static uint64_t segments(size_t len, int offload)
{
	size_t hdr = (offload ? 10 : 0) + 40;
	return len > hdr + 1448 ? (len - hdr + 1447) / 1448 : 1;
}

static void late_record(uint64_t ns, uint64_t weight)
{
	uint64_t bin = ns / 1000;
	late_hist[bin < LATE_BINS ? bin : LATE_BINS - 1] += weight;
	late_total += weight;
	if (ns > late_max_ns) late_max_ns = ns;
}

/* Smallest bin upper edge (µs) holding at least fraction q of the weight. */
static double late_quantile(double q)
{
	uint64_t want = (uint64_t)(q * (double)late_total + 0.5), seen = 0;
	for (uint64_t b = 0; b < LATE_BINS; b++) {
		seen += late_hist[b];
		if (seen >= want && seen > 0) return (double)(b + 1);
	}
	return 0;
}

static volatile sig_atomic_t stop;
static void on_signal(int s) { (void)s; stop = 1; }

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int tun_open(const char *name, int offload)
{
	struct ifreq ifr;
	int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) { perror("/dev/net/tun"); exit(1); }
	memset(&ifr, 0, sizeof ifr);
	ifr.ifr_flags = IFF_TUN | IFF_NO_PI | (offload ? IFF_VNET_HDR : 0);
	strncpy(ifr.ifr_name, name, IFNAMSIZ - 1);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) { perror("TUNSETIFF"); exit(1); }
	if (offload) {
		int sz = 10;
		if (ioctl(fd, TUNSETVNETHDRSZ, &sz) < 0) { perror("TUNSETVNETHDRSZ"); exit(1); }
		if (ioctl(fd, TUNSETOFFLOAD, TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6) < 0) {
			perror("TUNSETOFFLOAD");
			exit(1);
		}
	}
	return fd;
}

/* Room for a record of `len` bytes at head, wrapping to 0 when the end is too close (the
 * skipped tail bytes are marked with a zero-length record when there is room for one). */
static unsigned char *ring_reserve(struct ring *r, size_t len)
{
	size_t need = sizeof(struct rec) + ((len + 7) & ~7ul);
	if (r->head + need > RING_BYTES) {
		size_t skip = RING_BYTES - r->head;
		if (r->used + skip + need > RING_BYTES) return NULL;
		if (skip >= sizeof(struct rec)) {
			struct rec *m = (struct rec *)(r->buf + r->head);
			m->due = 0; m->len = UINT32_MAX;
		}
		r->used += skip;
		r->head = 0;
	}
	if (r->used + need > RING_BYTES) return NULL;
	return r->buf + r->head;
}

static void ring_commit(struct ring *r, uint64_t due, size_t len)
{
	struct rec *h = (struct rec *)(r->buf + r->head);
	size_t need = sizeof(struct rec) + ((len + 7) & ~7ul);
	h->due = due; h->len = (uint32_t)len;
	r->head += need; r->used += need;
}

/* Next record, skipping a wrap marker; NULL when empty. */
static struct rec *ring_front(struct ring *r)
{
	if (r->used == 0) return NULL;
	if (RING_BYTES - r->tail < sizeof(struct rec) ||
	    ((struct rec *)(r->buf + r->tail))->len == UINT32_MAX) {
		r->used -= RING_BYTES - r->tail;
		r->tail = 0;
		if (r->used == 0) return NULL;
	}
	return (struct rec *)(r->buf + r->tail);
}

static void ring_pop(struct ring *r, struct rec *h)
{
	size_t need = sizeof(struct rec) + ((h->len + 7) & ~7ul);
	r->tail += need; r->used -= need;
}

int main(int argc, char **argv)
{
	int offload = 0, opt;
	uint64_t delay = 0;
	while ((opt = getopt(argc, argv, "od:")) != -1) {
		if (opt == 'o') offload = 1;
		else if (opt == 'd') delay = strtoull(optarg, NULL, 10) * 1000000ull;
		else { fprintf(stderr, "usage: tunfwd [-o] [-d MS] DEV_A DEV_B\n"); return 2; }
	}
	if (argc - optind != 2) { fprintf(stderr, "usage: tunfwd [-o] [-d MS] DEV_A DEV_B\n"); return 2; }
	int fd[2] = { tun_open(argv[optind], offload), tun_open(argv[optind + 1], offload) };
	struct ring ring[2]; /* ring[i]: read from fd[i], written to fd[1 - i] */
	for (int i = 0; i < 2; i++) {
		ring[i].buf = malloc(RING_BYTES);
		if (!ring[i].buf) { perror("malloc"); return 1; }
		ring[i].head = ring[i].tail = ring[i].used = 0;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	uint64_t rx[2] = {0, 0}, tx[2] = {0, 0}, full[2] = {0, 0}, txerr[2] = {0, 0};
	static unsigned char scratch[MAX_PKT];
	printf("ready\n");
	fflush(stdout);
	while (!stop) {
		uint64_t now = now_ns();
		/* Release what is due. */
		uint64_t next = UINT64_MAX;
		for (int i = 0; i < 2; i++) {
			struct rec *h;
			while ((h = ring_front(&ring[i])) != NULL) {
				if (h->due > now) { if (h->due < next) next = h->due; break; }
				late_record(now - h->due, segments(h->len, offload));
				ssize_t n = write(fd[1 - i], (unsigned char *)(h + 1), h->len);
				if (n < 0) txerr[i]++; else tx[i]++;
				ring_pop(&ring[i], h);
			}
		}
		struct pollfd p[2] = { { fd[0], POLLIN, 0 }, { fd[1], POLLIN, 0 } };
		struct timespec ts, *tsp = NULL;
		if (next != UINT64_MAX) {
			uint64_t w = next > now ? next - now : 0;
			ts.tv_sec = (time_t)(w / 1000000000ull);
			ts.tv_nsec = (long)(w % 1000000000ull);
			tsp = &ts;
		}
		if (ppoll(p, 2, tsp, NULL) < 0 && errno != EINTR) { perror("ppoll"); return 1; }
		now = now_ns();
		for (int i = 0; i < 2; i++) {
			if (!(p[i].revents & POLLIN)) continue;
			for (int k = 0; k < READS_PER_PASS; k++) {
				ssize_t n = read(fd[i], scratch, sizeof scratch);
				if (n <= 0) break;
				rx[i]++;
				if (delay == 0) {
					if (write(fd[1 - i], scratch, (size_t)n) < 0) txerr[i]++; else tx[i]++;
					continue;
				}
				unsigned char *slot = ring_reserve(&ring[i], (size_t)n);
				if (!slot) { full[i]++; continue; }
				memcpy(slot + sizeof(struct rec), scratch, (size_t)n);
				ring_commit(&ring[i], now + delay, (size_t)n);
			}
		}
	}
	for (int i = 0; i < 2; i++)
		fprintf(stderr, "%s -> %s: read %llu written %llu write errors %llu fifo full %llu\n",
			argv[optind + i], argv[optind + 1 - i], (unsigned long long)rx[i],
			(unsigned long long)tx[i], (unsigned long long)txerr[i],
			(unsigned long long)full[i]);
	if (delay > 0)
		fprintf(stderr, "lateness: p50 %.0f us p99 %.0f us max %.0f us (%llu segments)\n",
			late_quantile(0.5), late_quantile(0.99), (double)late_max_ns / 1e3,
			(unsigned long long)late_total);
	return 0;
}
