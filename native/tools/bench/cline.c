/*
 * A cache line bounced between two parties, and the shared segment two ranks
 * on one host bounce it in.
 *
 * The time a line takes from one CPU to another is where the two CPUs sit:
 * one core's two hardware threads, two cores under one L3, two chiplets. On a
 * virtual machine it is where the hypervisor runs the two vCPUs right now,
 * which the guest cannot choose and which changes while it runs (docs/fit.md,
 * section 1: on the two-vCPU development host 13, 31 or 155 ns one way, and
 * every round trip between the ranks follows). railgauge-bench c2c bounces it
 * between two threads; prtt between its two ranks, as its probe of the host's
 * state when they share a host.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/host.h"
#include "bench.h"

/* Spins until the line holds want; 0, or -1 when exchange id was given up
 * (by the other side, or here after RG_BENCH_CLINE_TIMEOUT_NS). */
static int rg__cline_wait(rg_bench_cline_t *cl, uint_fast64_t want, uint_fast64_t id)
{
    uint64_t start = 0;
    unsigned spins = 0;

    while (atomic_load_explicit(&cl->line, memory_order_acquire) != want) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
        if (++spins % 4096 == 0) {
            if (atomic_load_explicit(&cl->abort, memory_order_relaxed) == id) {
                return -1;
            }
            if (start == 0) {
                start = rg_time_mono_ns();
            } else if (rg_time_mono_ns() - start > RG_BENCH_CLINE_TIMEOUT_NS) {
                atomic_store_explicit(&cl->abort, id, memory_order_relaxed);
                return -1;
            }
        }
    }
    return 0;
}

void rg_bench_cline_give_up(rg_bench_cline_t *cl, uint64_t base)
{
    atomic_store_explicit(&cl->abort, (uint_fast64_t)base + 1, memory_order_relaxed);
}

rg_status_t rg_bench_cline_lead(rg_bench_cline_t *cl, uint64_t base, long round_trips,
                                long chunks, const rg_timer_t *timer, double *chunk_ns)
{
    uint_fast64_t v = base, id = (uint_fast64_t)base + 1;
    uint64_t      t0, t1;
    long          j, r;

    for (j = 0; j < chunks; j++) {
        t0 = rg_timer_ticks(timer);
        for (r = 0; r < round_trips; r++, v += 2) {
            atomic_store_explicit(&cl->line, v + 1, memory_order_release);
            if (rg__cline_wait(cl, v + 2, id) != 0) {
                return RG_ERR_TIMEOUT;
            }
        }
        t1          = rg_timer_ticks(timer);
        chunk_ns[j] = rg_timer_us(timer, t1 - t0) * 1e3 / (2.0 * (double)round_trips);
    }
    return RG_OK;
}

rg_status_t rg_bench_cline_answer(rg_bench_cline_t *cl, uint64_t base, uint64_t round_trips)
{
    uint_fast64_t id = (uint_fast64_t)base + 1;
    uint64_t      i;

    for (i = 0; i < round_trips; i++) {
        if (rg__cline_wait(cl, base + 2 * i + 1, id) != 0) {
            return RG_ERR_TIMEOUT;
        }
        atomic_store_explicit(&cl->line, base + 2 * i + 2, memory_order_release);
    }
    return RG_OK;
}

rg_status_t rg_bench_segment_map(rg_boot_t *boot, int rank, int size, const char *tag,
                                 size_t len, void **seg_p, rg_err_t *err)
{
    struct { uint64_t host, nonce; } mine, *all;
    char        name[96];
    rg_status_t st;
    void       *seg = NULL;
    int         q, fd = -1, ok = 1;

    *seg_p = NULL;
    all    = malloc((size_t)size * sizeof(*all));
    if (all == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "%s: no memory", tag);
    }
    mine.host  = rg_host_id();
    mine.nonce = ((uint64_t)getpid() << 20) ^ (rg_time_mono_ns() & 0xfffff);
    st         = rg_boot_allgather(boot, &mine, sizeof(mine), all, err);
    if (st != RG_OK) {
        free(all);
        return st;
    }
    for (q = 1; q < size; q++) {
        if (all[q].host != all[0].host) {
            /* Every rank sees the same list: all return here alike. */
            free(all);
            return rg_err_set(err, RG_ERR_UNSUPPORTED, "%s: rank %d is on another host than "
                              "rank 0; a shared segment needs every rank on one host", tag, q);
        }
    }
    snprintf(name, sizeof(name), "/railgauge-%s-%llx", tag, (unsigned long long)all[0].nonce);
    free(all);
    if (rank == 0) {
        fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
        if (fd < 0 || ftruncate(fd, (off_t)len) != 0) {
            ok = 0;
            rg_err_set_errno(err, RG_ERR_IO, errno, "%s: shared segment %s", tag, name);
        }
    }
    st = rg_boot_barrier(boot, err);
    if (st == RG_OK && rank != 0 && (fd = shm_open(name, O_RDWR, 0600)) < 0) {
        ok = 0;
        rg_err_set_errno(err, RG_ERR_IO, errno, "%s: opening %s", tag, name);
    }
    if (st == RG_OK && ok) {
        seg = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (seg == MAP_FAILED) {
            seg = NULL;
            ok  = 0;
            rg_err_set_errno(err, RG_ERR_IO, errno, "%s: mapping %s", tag, name);
        }
    }
    if (fd >= 0) {
        close(fd);
    }
    if (st == RG_OK) {
        /* Everyone has it mapped (or failed) before it is unlinked. */
        int *oks = malloc((size_t)size * sizeof(int));

        st = oks == NULL ? rg_err_set(err, RG_ERR_NOMEM, "%s: no memory", tag)
                         : rg_boot_allgather(boot, &ok, sizeof(ok), oks, err);
        for (q = 0; st == RG_OK && q < size; q++) {
            if (!oks[q] && q != rank) {
                st = rg_err_set(err, RG_ERR_IO, "%s: rank %d could not map the shared segment",
                                tag, q);
            }
        }
        free(oks);
        if (rank == 0) {
            shm_unlink(name);
        }
    }
    if (st == RG_OK && !ok) {
        st = RG_ERR_IO;
    }
    if (st != RG_OK) {
        if (seg != NULL) {
            munmap(seg, len);
        }
        return st;
    }
    *seg_p = seg;
    return RG_OK;
}
