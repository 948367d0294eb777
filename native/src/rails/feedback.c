/*
 * railgauge: the rails transport's rate feedback (the adaptive policy): the
 * receiver measures the rate each rail delivers a peer's stripes at, by
 * dispersion, and sends its rates back (RATE) after striped messages; the
 * sender turns them into its weights to that peer, smoothed
 * (RG_RAILS_ADAPT_ALPHA) and floored (RG_RAILS_ADAPT_FLOOR).
 */
#include <math.h>
#include <string.h>

#include "base/timer.h"
#include "rails/rails_int.h"

#define RG__RAILS_BUSY_NS  50000u          /* back to back: within 50 us */
#define RG__RAILS_RATE_MIN ((size_t)65536) /* stripes shorter say nothing of a rate */

/* Whether rail r was busy when a stripe's header came on subchannel x: the
 * stripe queued right behind the last one, so its bytes arrive at the
 * rail's own pace (see rg__rails_rate_sample). */
int rg__rails_rate_busy(const rg__rrx_t *x)
{
    return x->t_done_ns != 0 && rg_time_mono_ns() - x->t_done_ns < RG__RAILS_BUSY_NS;
}

/* A stripe's bytes are all in on (r, peer), subchannel x. The rate of a
 * rail is measured by dispersion, as packet trains are: the time between
 * the ends of two stripes that followed each other on the rail without a
 * gap. Timing one stripe from its header would count bytes that waited in
 * the kernel's buffers as arriving at memory speed. */
void rg__rails_rate_sample(rg__rails_t *rl, int r, int peer, rg__rrx_t *x)
{
    rg__rpeer_t *pp = &rl->peers[peer];
    uint64_t     now;
    double       dt, rate;

    now = rg_time_mono_ns();
    dt  = (double)(now - x->t_done_ns);
    if (x->busy && dt > 0 && x->len >= RG__RAILS_RATE_MIN) {
        rate        = (double)x->len / dt;
        pp->rate[r] = pp->rate[r] > 0 ? 0.5 * rate + 0.5 * pp->rate[r] : rate;
    }
    x->t_done_ns = now;
}

/* Sends this rank's measured rates from peer back to it (adaptive). */
rg_status_t rg__rails_send_rates(rg__rails_t *rl, int peer)
{
    rg__rpeer_t *pp = &rl->peers[peer];
    rg__rsub_t  *s;
    double       v;
    int          r;

    if (pp->byes != 0) {
        return RG_OK;
    }
    s = rg__rsub_get(rl, RG__RAILS_HDR + (size_t)rl->nrails * sizeof(double));
    if (s == NULL) {
        return rg__rails_nomem(rl);
    }
    rg__rails_hdr(rl, peer, s->stage, RG__RAILS_T_RATE, 0, 0, 0, (uint64_t)rl->nrails);
    for (r = 0; r < rl->nrails; r++) {
        v = pp->rate[r];
        memcpy(s->stage + RG__RAILS_HDR + (size_t)r * sizeof(double), &v, sizeof(v));
    }
    rl->rate_msgs++;
    return rg__rails_post(rl, rg__rails_best(rl, peer), peer, s, s->stage,
                          RG__RAILS_HDR + (size_t)rl->nrails * sizeof(double), NULL);
}

/* A RATE message from peer: new send weights to it (over the rails up). */
void rg__rails_take_rates(rg__rails_t *rl, int peer, const unsigned char *b, size_t n)
{
    rg__rpeer_t *pp = &rl->peers[peer];
    double       rate[RG__RAILS_MAX], sum = 0, share, fl = rl->cfg.floor, tot = 0;
    int          r;

    if (rl->policy != RG__RAILS_P_ADAPTIVE || n != (size_t)rl->nrails * sizeof(double)) {
        return;
    }
    for (r = 0; r < rl->nrails; r++) {
        if (!rg__rails_up(rl, r)) {
            continue;
        }
        memcpy(&rate[r], b + (size_t)r * sizeof(double), sizeof(double));
        if (!(rate[r] > 0) || !isfinite(rate[r])) {
            return;  /* a rail not measured yet: keep the weights */
        }
        sum += rate[r];
    }
    if (!(sum > 0)) {
        return;
    }
    for (r = 0; r < rl->nrails; r++) {
        if (!rg__rails_up(rl, r)) {
            continue;
        }
        share    = rate[r] / sum;
        pp->w[r] = rl->cfg.alpha * share + (1.0 - rl->cfg.alpha) * pp->w[r];
        if (pp->w[r] < fl) {
            pp->w[r] = fl;
        }
        tot += pp->w[r];
    }
    for (r = 0; r < rl->nrails; r++) {
        pp->w[r] = rg__rails_up(rl, r) ? pp->w[r] / tot : 0.0;
    }
}
