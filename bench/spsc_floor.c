/*
 * spsc_floor: the floor for shared-memory messaging between two processes.
 *
 * Two processes (fork) pinned to two cores exchange messages through two bare
 * lock-free single-producer/single-consumer rings in a shared anonymous
 * mapping, one ring per direction.  Head and tail live on their own cache
 * lines, publication uses C11 release stores and acquire loads, and every wait
 * is a pure spin with _mm_pause().  There is no matching, no protocol and no
 * progress engine: whatever a real runtime costs on top of this is overhead.
 *
 * A ping-pong of s bytes copies the message into ring slots (in chunks of at
 * most --chunk bytes), publishes each slot, and the peer copies the chunks out
 * and answers with s bytes on the other ring.  After a warm-up that also checks
 * the payload, round trips are timed in samples of --group round trips (16 for
 * sizes up to 4 KiB, else 1) with one TSC read per sample (rdtscp, calibrated
 * against CLOCK_MONOTONIC), in several batches.  For every size one JSON line
 * goes to stdout:
 *
 *   {"impl":"spsc-floor","s":8,"oneway_us":..,"min_oneway_us":..,
 *    "mean_oneway_us":..,"p99_oneway_us":..,"bw_MBps":..,"iters":..,
 *    "batches":..,"batch_oneway_us":[..],"pinned":true,...}
 *
 * oneway_us is the median over all samples of (sample time / group) / 2, bw_MBps is
 * s / oneway_us (bytes per microsecond = 10^6 bytes/s).
 *
 * Build: cc -O2 -Wall -Wextra -Werror -std=c11 -o spsc_floor spsc_floor.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <immintrin.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "bench_common.h"

/* 128 bytes: one line plus the adjacent line the spatial prefetcher pairs. */
#define FLOOR_LINE 128
#define FLOOR_MAX_SIZES 32

enum floor_signal {
    FLOOR_SIGNAL_HEAD, /* the consumer polls the producer's head index */
    FLOOR_SIGNAL_SEQ,  /* the consumer polls a sequence word in the slot itself */
};

struct floor_opts {
    size_t sizes[FLOOR_MAX_SIZES];
    int nsizes;
    long iters;      /* timed iterations per batch for sizes <= 4 KiB */
    long big_bytes;  /* byte budget per batch that bounds iterations of big sizes */
    long min_iters;  /* lower bound of timed iterations per batch */
    int batches;
    long warmup;
    long group;      /* round trips per timed sample for sizes <= 4 KiB */
    size_t chunk;    /* payload bytes per ring slot */
    unsigned slots;  /* slots per ring, a power of two */
    int cores[2];
    enum floor_signal signal;
    const char *impl;
};

/* Every slot starts with this header; the payload follows it. */
struct floor_slot_hdr {
    uint32_t len;
    _Atomic uint32_t seq; /* index + 1 of the message in this slot, 0 = never used */
};

/* One direction.  The producer writes head, the consumer writes tail. */
struct floor_ring {
    alignas(FLOOR_LINE) _Atomic uint64_t head;
    alignas(FLOOR_LINE) _Atomic uint64_t tail;
    alignas(FLOOR_LINE) unsigned char slots[];
};

/* Private view of one ring end: the index owned here and a cached copy of the
 * peer's index, so the shared line is only read when the cache says "full" or
 * "empty". */
struct floor_end {
    struct floor_ring *ring;
    uint64_t mine;
    uint64_t peer_cached;
    size_t stride;
    unsigned mask;
    unsigned slots;
    size_t chunk;
    enum floor_signal signal;
};

static unsigned char *floor_slot(const struct floor_end *e, uint64_t idx)
{
    return e->ring->slots + (size_t)(idx & e->mask) * e->stride;
}

static void floor_send(struct floor_end *e, const unsigned char *buf, size_t len)
{
    size_t off = 0;

    do {
        size_t n = len - off < e->chunk ? len - off : e->chunk;

        while (e->mine - e->peer_cached >= e->slots) {
            e->peer_cached = atomic_load_explicit(&e->ring->tail, memory_order_acquire);
            if (e->mine - e->peer_cached >= e->slots)
                _mm_pause();
        }
        unsigned char *slot = floor_slot(e, e->mine);
        struct floor_slot_hdr *hdr = (struct floor_slot_hdr *)slot;
        hdr->len = (uint32_t)n;
        memcpy(slot + sizeof(*hdr), buf + off, n);
        e->mine++;
        if (e->signal == FLOOR_SIGNAL_SEQ)
            atomic_store_explicit(&hdr->seq, (uint32_t)e->mine, memory_order_release);
        else
            atomic_store_explicit(&e->ring->head, e->mine, memory_order_release);
        off += n;
    } while (off < len);
}

/* Receives exactly len bytes; returns 0, or -1 when a slot is malformed. */
static int floor_recv(struct floor_end *e, unsigned char *buf, size_t len)
{
    size_t off = 0;

    do {
        unsigned char *slot = floor_slot(e, e->mine);
        struct floor_slot_hdr *hdr = (struct floor_slot_hdr *)slot;

        if (e->signal == FLOOR_SIGNAL_SEQ) {
            while (atomic_load_explicit(&hdr->seq, memory_order_acquire) != (uint32_t)(e->mine + 1))
                _mm_pause();
        } else {
            while (e->peer_cached == e->mine) {
                e->peer_cached = atomic_load_explicit(&e->ring->head, memory_order_acquire);
                if (e->peer_cached == e->mine)
                    _mm_pause();
            }
        }
        uint32_t n = hdr->len;
        if (n > len - off)
            return -1;
        memcpy(buf + off, slot + sizeof(*hdr), n);
        off += n;
        e->mine++;
        atomic_store_explicit(&e->ring->tail, e->mine, memory_order_release);
    } while (off < len);
    return 0;
}

/* Round trips per timed sample: small sizes are timed in groups, because the
 * TSC of this kind of machine advances in 10 ns steps (AMD counts a 100 MHz
 * reference clock), a tenth of a small round trip. */
static long floor_group_for(const struct floor_opts *o, size_t s)
{
    return s <= 4096 ? o->group : 1;
}

static long floor_iters_for(const struct floor_opts *o, size_t s)
{
    long n = o->iters;

    if (s > 4096) {
        long budget = o->big_bytes / (long)s;
        if (budget < n)
            n = budget;
    }
    if (n < o->min_iters)
        n = o->min_iters;
    /* Whole samples of floor_group_for() round trips each, at least one. */
    long g = floor_group_for(o, s);
    return n < g ? g : n / g * g;
}

static int floor_pin(int core)
{
    cpu_set_t set;

    CPU_ZERO(&set);
    CPU_SET(core, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0) {
        fprintf(stderr, "spsc_floor: sched_setaffinity(core %d): %s\n", core, strerror(errno));
        return -1;
    }
    return 0;
}

static void floor_usage(FILE *f)
{
    fprintf(f,
            "usage: spsc_floor [--sizes 1,8,1048576] [--iters N] [--batches B] [--warmup W]\n"
            "                  [--big-bytes BYTES] [--min-iters N] [--group G] [--chunk BYTES]\n"
            "                  [--slots N] [--cores A,B] [--signal head|seq] [--timer tsc|clock]\n"
            "                  [--impl NAME]\n"
            "--signal head: the consumer polls the producer's head index (default);\n"
            "--signal seq:  the consumer polls a sequence word inside the slot, so a\n"
            "               small message moves one cache line instead of two.\n");
}

static int floor_parse(int argc, char **argv, struct floor_opts *o)
{
    *o = (struct floor_opts){
        .sizes = {1, 8, 1048576},
        .nsizes = 3,
        .iters = 100000,
        .big_bytes = 256L << 20,
        .min_iters = 100,
        .batches = 5,
        .warmup = 10000,
        .group = 16,
        .chunk = 32768,
        .slots = 16,
        .cores = {0, 1},
        .signal = FLOOR_SIGNAL_HEAD,
        .impl = "spsc-floor",
    };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        long n;

        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            floor_usage(stdout);
            exit(0);
        }
        if (!v)
            goto bad;
        i++;
        if (!strcmp(a, "--sizes")) {
            if (bt_parse_sizes(v, o->sizes, FLOOR_MAX_SIZES, &o->nsizes))
                goto bad;
        } else if (!strcmp(a, "--iters")) {
            if (bt_parse_long(v, 1, &o->iters))
                goto bad;
        } else if (!strcmp(a, "--min-iters")) {
            if (bt_parse_long(v, 1, &o->min_iters))
                goto bad;
        } else if (!strcmp(a, "--big-bytes")) {
            if (bt_parse_long(v, 1, &o->big_bytes))
                goto bad;
        } else if (!strcmp(a, "--batches")) {
            if (bt_parse_long(v, 1, &n) || n > 1000)
                goto bad;
            o->batches = (int)n;
        } else if (!strcmp(a, "--warmup")) {
            if (bt_parse_long(v, 0, &o->warmup))
                goto bad;
        } else if (!strcmp(a, "--group")) {
            if (bt_parse_long(v, 1, &o->group) || o->group > 4096)
                goto bad;
        } else if (!strcmp(a, "--chunk")) {
            if (bt_parse_long(v, 64, &n) || n > (64L << 20))
                goto bad;
            o->chunk = (size_t)n;
        } else if (!strcmp(a, "--slots")) {
            if (bt_parse_long(v, 2, &n) || n > 65536 || (n & (n - 1)))
                goto bad;
            o->slots = (unsigned)n;
        } else if (!strcmp(a, "--cores")) {
            if (sscanf(v, "%d,%d", &o->cores[0], &o->cores[1]) != 2 || o->cores[0] < 0 ||
                o->cores[1] < 0)
                goto bad;
        } else if (!strcmp(a, "--signal")) {
            if (!strcmp(v, "head"))
                o->signal = FLOOR_SIGNAL_HEAD;
            else if (!strcmp(v, "seq"))
                o->signal = FLOOR_SIGNAL_SEQ;
            else
                goto bad;
        } else if (!strcmp(a, "--timer")) {
            if (!strcmp(v, "tsc"))
                bt_use_tsc = 1;
            else if (!strcmp(v, "clock"))
                bt_use_tsc = 0;
            else
                goto bad;
        } else if (!strcmp(a, "--impl")) {
            o->impl = v;
        } else {
            goto bad;
        }
        continue;
    bad:
        fprintf(stderr, "spsc_floor: bad or missing value for option '%s'\n", a);
        floor_usage(stderr);
        return -1;
    }
    return 0;
}

static void floor_fill(unsigned char *buf, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = (unsigned char)(i * 131u + seed);
}

static int floor_check(const unsigned char *buf, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++)
        if (buf[i] != (unsigned char)(i * 131u + seed))
            return -1;
    return 0;
}

/* The child answers every message with a message of the same size; it runs
 * the same schedule as the parent, so no control messages are needed. */
static int floor_echo(const struct floor_opts *o, struct floor_end *rx, struct floor_end *tx,
                      unsigned char *buf)
{
    for (int k = 0; k < o->nsizes; k++) {
        size_t s = o->sizes[k];
        long total = o->warmup + (long)o->batches * floor_iters_for(o, s);

        for (long i = 0; i < total; i++) {
            if (floor_recv(rx, buf, s))
                return -1;
            floor_send(tx, buf, s);
        }
    }
    return 0;
}

static int floor_measure(const struct floor_opts *o, struct floor_end *tx, struct floor_end *rx,
                         unsigned char *sbuf, unsigned char *rbuf, int pinned)
{
    double tpn = bt_ticks_per_ns();

    for (int k = 0; k < o->nsizes; k++) {
        size_t s = o->sizes[k];
        long group = floor_group_for(o, s);
        long per_batch = floor_iters_for(o, s) / group; /* samples per batch */
        size_t nsamp = (size_t)per_batch * (size_t)o->batches;
        /* ticks of one sample -> one-way µs */
        double us_half = 1.0 / (tpn * 2000.0 * (double)group);
        uint64_t *rtt = malloc(nsamp * sizeof(*rtt));
        uint64_t *tmp = malloc((size_t)per_batch * sizeof(*tmp));
        double *batch_med = malloc((size_t)o->batches * sizeof(*batch_med));
        double sum_ticks = 0.0;
        int rc = -1;

        if (!rtt || !batch_med || !tmp) {
            fprintf(stderr, "spsc_floor: out of memory for %zu samples\n", nsamp);
            goto next;
        }
        /* Warm-up: touches every slot and page and checks the payload. */
        for (long i = 0; i < o->warmup; i++) {
            floor_fill(sbuf, s, (unsigned)i);
            floor_send(tx, sbuf, s);
            if (floor_recv(rx, rbuf, s) || floor_check(rbuf, s, (unsigned)i)) {
                fprintf(stderr, "spsc_floor: payload check failed (s=%zu, i=%ld)\n", s, i);
                goto next;
            }
        }
        for (int b = 0; b < o->batches; b++) {
            uint64_t *r = rtt + (size_t)b * (size_t)per_batch;
            uint64_t t0 = bt_ticks(), tb = t0;

            for (long j = 0; j < per_batch; j++) {
                for (long g = 0; g < group; g++) {
                    floor_send(tx, sbuf, s);
                    if (floor_recv(rx, rbuf, s)) {
                        fprintf(stderr, "spsc_floor: malformed slot (s=%zu)\n", s);
                        goto next;
                    }
                }
                uint64_t t1 = bt_ticks();
                r[j] = t1 - t0;
                t0 = t1;
            }
            sum_ticks += (double)(t0 - tb);
            memcpy(tmp, r, (size_t)per_batch * sizeof(*tmp));
            qsort(tmp, (size_t)per_batch, sizeof(*tmp), bt_cmp_u64);
            batch_med[b] = bt_median_sorted(tmp, (size_t)per_batch) * us_half;
        }
        qsort(rtt, nsamp, sizeof(*rtt), bt_cmp_u64);
        double med = bt_median_sorted(rtt, nsamp) * us_half;
        double p99 = (double)rtt[(size_t)((double)(nsamp - 1) * 0.99)] * us_half;

        printf("{\"impl\":\"%s\",\"s\":%zu,\"oneway_us\":%.4f,\"min_oneway_us\":%.4f,"
               "\"mean_oneway_us\":%.4f,\"p99_oneway_us\":%.4f,\"bw_MBps\":%.2f,"
               "\"iters\":%ld,\"group\":%ld,\"batches\":%d,\"warmup\":%ld,\"chunk\":%zu,"
               "\"slots\":%u,\"signal\":\"%s\",\"pinned\":%s,\"timer\":\"%s\","
               "\"ticks_per_ns\":%.6f,\"batch_oneway_us\":[",
               o->impl, s, med, (double)rtt[0] * us_half, sum_ticks / (double)nsamp * us_half, p99,
               (double)s / med, per_batch * group, group, o->batches, o->warmup, o->chunk,
               o->slots, o->signal == FLOOR_SIGNAL_SEQ ? "seq" : "head",
               pinned ? "true" : "false", bt_use_tsc ? "tsc" : "clock", tpn);
        for (int b = 0; b < o->batches; b++)
            printf("%s%.4f", b ? "," : "", batch_med[b]);
        printf("]}\n");
        fflush(stdout);
        rc = 0;
    next:
        free(rtt);
        free(batch_med);
        free(tmp);
        if (rc)
            return rc;
    }
    return 0;
}

#define FLOOR_END(r)                                                                     \
    {.ring = (r), .stride = stride, .mask = o.slots - 1, .slots = o.slots, .chunk = o.chunk, \
     .signal = o.signal}

int main(int argc, char **argv)
{
    struct floor_opts o;
    size_t maxs = 0, stride, ring_bytes, map_bytes;
    unsigned char *map, *sbuf = NULL, *rbuf = NULL;
    struct floor_ring *r0, *r1;
    pid_t child;
    int status, rc = 1, pinned;

    if (floor_parse(argc, argv, &o))
        return 2;
    for (int k = 0; k < o.nsizes; k++)
        if (o.sizes[k] > maxs)
            maxs = o.sizes[k];

    stride = (sizeof(struct floor_slot_hdr) + o.chunk + FLOOR_LINE - 1) / FLOOR_LINE * FLOOR_LINE;
    ring_bytes = sizeof(struct floor_ring) + (size_t)o.slots * stride;
    ring_bytes = (ring_bytes + 4095) / 4096 * 4096;
    map_bytes = 2 * ring_bytes;
    map = mmap(NULL, map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) {
        fprintf(stderr, "spsc_floor: mmap(%zu bytes): %s\n", map_bytes, strerror(errno));
        return 1;
    }
    /* Touch every page before fork so neither side takes first-touch faults. */
    memset(map, 0, map_bytes);
    r0 = (struct floor_ring *)map;                 /* parent -> child */
    r1 = (struct floor_ring *)(map + ring_bytes);  /* child -> parent */

    sbuf = aligned_alloc(4096, (maxs + 4095) / 4096 * 4096);
    rbuf = aligned_alloc(4096, (maxs + 4095) / 4096 * 4096);
    if (!sbuf || !rbuf) {
        fprintf(stderr, "spsc_floor: out of memory for %zu-byte buffers\n", maxs);
        goto out;
    }
    memset(sbuf, 0, maxs);
    memset(rbuf, 0, maxs);

    fflush(stdout);
    child = fork();
    if (child < 0) {
        fprintf(stderr, "spsc_floor: fork: %s\n", strerror(errno));
        goto out;
    }
    if (child == 0) {
        struct floor_end rx = FLOOR_END(r0);
        struct floor_end tx = FLOOR_END(r1);

        /* Never outlive the parent: the echo loop would spin forever. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() == 1)
            _exit(1);
        floor_pin(o.cores[1]);
        _exit(floor_echo(&o, &rx, &tx, rbuf) ? 1 : 0);
    }

    pinned = floor_pin(o.cores[0]) == 0;
    {
        struct floor_end tx = FLOOR_END(r0);
        struct floor_end rx = FLOOR_END(r1);

        rc = floor_measure(&o, &tx, &rx, sbuf, rbuf, pinned) ? 1 : 0;
    }
    if (rc)
        kill(child, SIGKILL);
    if (waitpid(child, &status, 0) < 0) {
        fprintf(stderr, "spsc_floor: waitpid: %s\n", strerror(errno));
        rc = 1;
    } else if (!rc && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        fprintf(stderr, "spsc_floor: echo process failed (status 0x%x)\n", status);
        rc = 1;
    }
out:
    free(sbuf);
    free(rbuf);
    munmap(map, map_bytes);
    return rc;
}
