/*
 * railgauge: taking a failed rail back (RG_RAILS_RETRY). Rank 0 starts a
 * try once the rail has been down long enough and its end of the rail has a
 * carrier; every rank opens the rail's transport anew on a thread, with a
 * bootstrap whose allgathers are JOIN messages over the rails still up
 * (rg_boot_custom), and the rail is back where every rank's open succeeded.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/timer.h"
#include "boot/boot.h"
#include "rails/rails_int.h"
#include "xport/netaddr.h"

#define RG__RAILS_STEP_NS        15000000000ull  /* a rejoin's step waits at most this */
#define RG__RAILS_BACKOFF_MAX_NS 30000000000ull

/* One try to take rail `rail` back: a thread opens the rail's transport anew
 * (its own bootstrap's allgathers are messages over the rails still up, JOIN:
 * the rail, the try's epoch, the step and a rank's bytes), then every rank
 * tells the others whether its open succeeded (the last step); the rail is
 * back where all did. The thread never touches the rails transport: the
 * progress engine moves its bytes through this record, under mu. */
typedef struct rg__rejoin {
    pthread_mutex_t mu;
    pthread_cond_t  cv;
    int             refs;       /* the transport, the thread */
    int             abandoned;  /* the transport let go of it */
    int             done;
    int             rail, rank, size;
    uint64_t        epoch;
    char            name[RG_CONFIG_STRING_MAX + 8];
    char            job[64];
    unsigned        step;       /* the step the thread is in */
    unsigned char   out[RG__RAILS_STEPS][RG__RAILS_BLOB_MAX];
    size_t          outlen[RG__RAILS_STEPS];
    int             out_ready[RG__RAILS_STEPS], out_sent[RG__RAILS_STEPS];
    unsigned char  *in;         /* [step][rank][RG__RAILS_BLOB_MAX] */
    size_t         *inlen;      /* [step][rank]; SIZE_MAX: not come */
    rg_status_t     result;
    char            why[RG_ERR_MSG_MAX];
    rg_xport_t     *xp;         /* the new instance, when result is RG_OK */
} rg__rejoin_t;

static void rg__rejoin_unref(rg__rejoin_t *j)
{
    int last;

    pthread_mutex_lock(&j->mu);
    last = --j->refs == 0;
    pthread_mutex_unlock(&j->mu);
    if (last) {
        if (j->xp != NULL) {
            rg_xport_close(j->xp);
        }
        pthread_cond_destroy(&j->cv);
        pthread_mutex_destroy(&j->mu);
        free(j->in);
        free(j->inlen);
        free(j);
    }
}

/* The bootstrap allgather of the thread (rg_boot_custom). */
static rg_status_t rg__rejoin_allgather(void *ctx, const void *mine, size_t len, void *all,
                                        rg_err_t *err)
{
    rg__rejoin_t   *j = ctx;
    struct timespec ts;
    rg_status_t     status = RG_OK;
    unsigned        k;
    int             p, missing = -1, rc = 0;

    pthread_mutex_lock(&j->mu);
    k = j->step++;
    if (k >= RG__RAILS_STEPS || len > RG__RAILS_BLOB_MAX) {
        pthread_mutex_unlock(&j->mu);
        return rg_err_set(err, RG_ERR_UNSUPPORTED,
                          "step %u of %zu B: a rail is taken back in at most %u steps of %u B",
                          k + 1, len, RG__RAILS_STEPS, RG__RAILS_BLOB_MAX);
    }
    if (len > 0) {
        memcpy(j->out[k], mine, len);
    }
    j->outlen[k]    = len;
    j->out_ready[k] = 1;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += (time_t)(RG__RAILS_STEP_NS / 1000000000ull);
    for (;;) {
        for (missing = -1, p = 0; p < j->size && missing < 0; p++) {
            if (p != j->rank && j->inlen[(size_t)k * (size_t)j->size + (size_t)p] == SIZE_MAX) {
                missing = p;
            }
        }
        if (missing < 0 || j->abandoned || rc == ETIMEDOUT) {
            break;
        }
        rc = pthread_cond_timedwait(&j->cv, &j->mu, &ts);
    }
    if (j->abandoned) {
        status = rg_err_set(err, RG_ERR_CANCELED, "the rails transport let go of the try");
    } else if (missing >= 0) {
        status = rg_err_set(err, RG_ERR_TIMEOUT, "rank %d did not take part within %llu s",
                            missing, (unsigned long long)(RG__RAILS_STEP_NS / 1000000000ull));
    }
    for (p = 0; p < j->size && status == RG_OK; p++) {
        size_t n = p == j->rank ? len : j->inlen[(size_t)k * (size_t)j->size + (size_t)p];

        if (n != len) {
            status = rg_err_set(err, RG_ERR_BOOTSTRAP, "rank %d gave %zu B to step %u, not %zu",
                                p, n, k + 1, len);
        } else if (len > 0) {
            memcpy((unsigned char *)all + (size_t)p * len,
                   p == j->rank ? mine
                                : j->in + ((size_t)k * (size_t)j->size + (size_t)p) *
                                              RG__RAILS_BLOB_MAX, len);
        }
    }
    pthread_mutex_unlock(&j->mu);
    return status;
}

static void *rg__rejoin_main(void *arg)
{
    rg__rejoin_t  *j = arg;
    rg_boot_t     *boot = NULL;
    rg_xport_t    *xp = NULL;
    rg_err_t       err;
    rg_status_t    status;
    unsigned char  ok, *oks;
    int            p;

    rg_err_clear(&err);
    oks    = malloc((size_t)j->size);
    status = oks == NULL ? rg_err_set(&err, RG_ERR_NOMEM, "cannot allocate %d bytes", j->size)
                         : rg_boot_custom(j->rank, j->size, j->job, rg__rejoin_allgather, j,
                                          &boot, &err);
    if (status == RG_OK) {
        status = rg_xport_open(j->name, boot, &xp, &err);
    }
    if (status != RG_OK) {
        snprintf(j->why, sizeof(j->why), "%s", rg_err_message(&err));
    }
    ok = status == RG_OK;
    if (boot != NULL) {
        /* The last step, whatever the open's steps were: the outcome. */
        pthread_mutex_lock(&j->mu);
        j->step = RG__RAILS_STEPS - 1;
        pthread_mutex_unlock(&j->mu);
        rg_err_clear(&err);
        if (rg_boot_allgather(boot, &ok, 1, oks, &err) != RG_OK) {
            if (ok) {
                snprintf(j->why, sizeof(j->why), "%s", rg_err_message(&err));
            }
            ok = 0;
        }
        for (p = 0; p < j->size && ok; p++) {
            if (!oks[p]) {
                snprintf(j->why, sizeof(j->why), "rank %d could not open it", p);
                ok = 0;
            }
        }
        rg_boot_fini(boot);
    }
    free(oks);
    if (xp != NULL) {
        xp->boot = NULL;  /* the rails transport gives it its own */
        if (!ok) {
            rg_xport_close(xp);
            xp = NULL;
        }
    }
    pthread_mutex_lock(&j->mu);
    j->xp     = xp;
    j->result = ok ? RG_OK : RG_ERR_PEER_DEAD;
    j->done   = 1;
    pthread_mutex_unlock(&j->mu);
    rg__rejoin_unref(j);
    return NULL;
}

/* The item of RG_RAILS_LIST that rail r binds to. */
static const char *rg__rails_where(const rg__rails_t *rl, int r)
{
    const char *w = strchr(rl->rname[r], strcmp(rl->cfg.over, "tcp") == 0 ? ':' : '@');

    return w != NULL ? w + 1 : rl->rname[r];
}

/* Starts a try to take rail r back as epoch (JOINs of it may be in). */
static rg_status_t rg__rails_rejoin_start(rg__rails_t *rl, int r, uint64_t epoch)
{
    rg__rejoin_t      *j;
    pthread_attr_t     attr;
    pthread_condattr_t ca;
    size_t             cells = (size_t)RG__RAILS_STEPS * (size_t)rl->super.size, i;
    pthread_t          th;
    int                rc;

    j = calloc(1, sizeof(*j));
    if (j == NULL || (j->in = malloc(cells * RG__RAILS_BLOB_MAX)) == NULL ||
        (j->inlen = malloc(cells * sizeof(size_t))) == NULL) {
        if (j != NULL) {
            free(j->in);
        }
        free(j);
        return rg__rails_nomem(rl);
    }
    for (i = 0; i < cells; i++) {
        j->inlen[i] = SIZE_MAX;
    }
    pthread_mutex_init(&j->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&j->cv, &ca);
    pthread_condattr_destroy(&ca);
    j->refs  = 2;
    j->rail  = r;
    j->rank  = rl->super.rank;
    j->size  = rl->super.size;
    j->epoch = epoch;
    snprintf(j->name, sizeof(j->name), "%s", rl->rname[r]);
    snprintf(j->job, sizeof(j->job), "%s",
             rl->super.boot != NULL ? rg_boot_job_id(rl->super.boot) : "");
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&th, &attr, rg__rejoin_main, j);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        j->refs = 1;
        rg__rejoin_unref(j);
        fprintf(stderr, "railgauge: rank %d: cannot start a thread to take rail %d back: %s\n",
                rl->super.rank, r, strerror(rc));
        return RG_OK;  /* the rail stays down; the transport goes on */
    }
    rl->rj[r]         = j;
    rl->epoch_seen[r] = epoch;
    rl->rejoin_tries++;
    return RG_OK;
}

/* The transport lets go of rail r's try (the thread ends on its own). */
void rg__rails_rejoin_drop(rg__rails_t *rl, int r)
{
    rg__rejoin_t *j = rl->rj[r];

    if (j == NULL) {
        return;
    }
    pthread_mutex_lock(&j->mu);
    j->abandoned = 1;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    rl->rj[r] = NULL;
    rg__rejoin_unref(j);
}

/* A JOIN from peer: step k of the try epoch to take rail r back. A newer try
 * than any seen here starts this rank's part of it (closing rail r first if
 * it is still up here: the peer's notice that it failed is still on its
 * way); an older one is over. */
rg_status_t rg__rails_take_join(rg__rails_t *rl, int peer, const uint64_t v[5],
                                const unsigned char *b)
{
    int           r = (int)v[0];
    unsigned      k = (unsigned)v[2];
    rg__rejoin_t *j;
    rg_status_t   status;

    if (v[0] >= (uint64_t)rl->nrails || v[2] >= RG__RAILS_STEPS || v[3] > RG__RAILS_BLOB_MAX) {
        return RG_ERR_PARSE;
    }
    if (rl->closing || !rl->fo) {
        return RG_OK;
    }
    if (v[1] > rl->epoch_seen[r]) {
        rg__rails_rejoin_drop(rl, r);
        if (rg__rails_up(rl, r)) {
            char why[96];

            snprintf(why, sizeof(why), "rank %d is taking it back into use", peer);
            (void)rg__rails_rail_failed(rl, r, RG_ERR_PEER_DEAD, why);
        }
        status = rg__rails_rejoin_start(rl, r, v[1]);
        if (status != RG_OK) {
            return status;
        }
    }
    j = rl->rj[r];
    if (j == NULL || j->epoch != v[1]) {
        return RG_OK;
    }
    pthread_mutex_lock(&j->mu);
    memcpy(j->in + ((size_t)k * (size_t)j->size + (size_t)peer) * RG__RAILS_BLOB_MAX, b,
           (size_t)v[3]);
    j->inlen[(size_t)k * (size_t)j->size + (size_t)peer] = (size_t)v[3];
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    return RG_OK;
}

/* Rail r's new instance xp joins the others. */
static rg_status_t rg__rails_install(rg__rails_t *rl, int r, rg_xport_t *xp, uint64_t epoch)
{
    rg__rrx_t *x;
    int        peer, size = rl->super.size;
    char       why[96];

    xp->boot           = rl->super.boot;
    rl->rail[r]        = xp;
    rl->epoch[r]       = epoch;
    rl->alive         |= 1u << r;
    rl->idle[r]        = 0;
    rl->busy_rx[r]     = 0;
    rl->recoveries++;
    for (peer = 0; peer < size; peer++) {
        rg__rpeer_t *pp = &rl->peers[peer];

        pp->byes &= ~(1u << r);
        rg__rails_weights_back(rl, pp, r);
        if (peer == rl->super.rank) {
            continue;
        }
        x            = rg__rails_rx(rl, r, peer);
        x->state     = RG__RAILS_RX_HDR;
        x->msg       = NULL;
        x->t_done_ns = 0;
        x->intmp     = 0;
        if (rg__rails_post_hdr(rl, r, peer) != RG_OK) {
            return rl->failed;
        }
    }
    snprintf(why, sizeof(why), "back after %.2f s (try %llu)",
             (double)(rg_time_mono_ns() - rl->down_ns[r]) * 1e-9, (unsigned long long)epoch);
    fprintf(stderr, "railgauge: rank %d: rail %d (%s) is in use again: %s\n", rl->super.rank, r,
            rl->rname[r], why);
    rg__rails_event(rl, r, "up", why);
    return RG_OK;
}

/* Rank 0, rail r down and no try of it running: starts one once the rail
 * has been down long enough (RG_RAILS_RETRY, the wait doubling after each
 * failed try up to 30 s) and its end here has a carrier. *now: the time, read
 * once per progress call (0: not yet). */
static rg_status_t rg__rails_rejoin_due(rg__rails_t *rl, int r, uint64_t *now)
{
    if (rl->super.rank != 0 || rl->closing || rl->cfg.retry_ns <= 0 ||
        ((rl->alive | rl->down_pending) >> r) & 1u || rl->alive == 0) {
        return RG_OK;
    }
    if (*now == 0) {
        *now = rg_time_mono_ns();
    }
    if (*now < rl->next_try_ns[r]) {
        return RG_OK;
    }
    if (!rg_netaddr_carrier(rg__rails_where(rl, r))) {
        rl->next_try_ns[r] = *now + (uint64_t)rl->cfg.retry_ns;  /* look again then */
        return RG_OK;
    }
    rl->backoff_ns[r]  = rl->backoff_ns[r] * 2 < RG__RAILS_BACKOFF_MAX_NS
                             ? rl->backoff_ns[r] * 2 : RG__RAILS_BACKOFF_MAX_NS;
    rl->next_try_ns[r] = *now + rl->backoff_ns[r];
    return rg__rails_rejoin_start(rl, r, rl->epoch_seen[r] + 1);
}

/* Sends the bytes that try j's thread gave for its steps, as JOINs, to every
 * peer on its best rail up. */
static rg_status_t rg__rails_rejoin_send(rg__rails_t *rl, int r, rg__rejoin_t *j)
{
    rg__rsub_t   *s;
    unsigned char blob[RG__RAILS_BLOB_MAX];
    size_t        len;
    unsigned      k;
    int           peer, send;
    rg_status_t   status;

    for (k = 0; k < RG__RAILS_STEPS; k++) {
        pthread_mutex_lock(&j->mu);
        send = j->out_ready[k] && !j->out_sent[k];
        len  = j->outlen[k];
        if (send) {
            memcpy(blob, j->out[k], len);
            j->out_sent[k] = 1;
        }
        pthread_mutex_unlock(&j->mu);
        for (peer = 0; send && peer < rl->super.size; peer++) {
            if (peer == rl->super.rank || rl->alive == 0) {
                continue;
            }
            s = rg__rsub_get(rl, RG__RAILS_HDR + len);
            if (s == NULL) {
                return rg__rails_nomem(rl);
            }
            rg__rails_hdr(rl, peer, s->stage, RG__RAILS_T_JOIN, (uint64_t)r, j->epoch, k, len);
            memcpy(s->stage + RG__RAILS_HDR, blob, len);
            status = rg__rails_post(rl, rg__rails_best(rl, peer), peer, s, s->stage,
                                    RG__RAILS_HDR + len, NULL);
            if (status != RG_OK) {
                return status;
            }
        }
    }
    return RG_OK;
}

/* Moves the tries on: sends the bytes their threads gave, takes in the rails
 * whose try succeeded, and (rank 0) starts a try for a rail down long
 * enough whose end here has a carrier. */
rg_status_t rg__rails_rejoin_step(rg__rails_t *rl)
{
    rg__rejoin_t *j;
    uint64_t      now = 0;
    int           r, done;
    rg_status_t   status;

    for (r = 0; r < rl->nrails; r++) {
        if ((j = rl->rj[r]) == NULL) {
            status = rg__rails_rejoin_due(rl, r, &now);
            if (status != RG_OK) {
                return status;
            }
            continue;
        }
        status = rg__rails_rejoin_send(rl, r, j);
        if (status != RG_OK) {
            return status;
        }
        pthread_mutex_lock(&j->mu);
        done = j->done;
        pthread_mutex_unlock(&j->mu);
        if (!done || ((rl->down_pending >> r) & 1u)) {
            continue;  /* (the old instance goes first, at the next reap) */
        }
        rl->rj[r] = NULL;
        if (j->result == RG_OK && !rg__rails_up(rl, r)) {
            rg_xport_t *xp = j->xp;

            j->xp = NULL;
            rg__rejoin_unref(j);
            status = rg__rails_install(rl, r, xp, rl->epoch_seen[r]);
            if (status != RG_OK) {
                return status;
            }
            continue;
        }
        if (rl->super.rank == 0) {
            char why[RG_ERR_MSG_MAX + 64];

            snprintf(why, sizeof(why), "try %llu failed: %s", (unsigned long long)j->epoch,
                     j->why);
            fprintf(stderr, "railgauge: rank %d: rail %d (%s) is still down: %s; next try in "
                    "%.0f s\n", rl->super.rank, r, rl->rname[r], why,
                    (double)rl->backoff_ns[r] * 1e-9);
            rg__rails_event(rl, r, "retry", why);
        }
        rg__rejoin_unref(j);
    }
    return RG_OK;
}
