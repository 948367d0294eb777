/*
 * railgauge: the rails transport's policies (RG_RAILS_POLICY): which rail a
 * whole message takes, how a message is cut into stripes by the weights,
 * and the weights themselves when the transport opens, when a rail goes
 * down and when it comes back. The adaptive policy's weights move with the
 * receiver's rates (feedback.c).
 */
#include <math.h>
#include <string.h>

#include "rails/rails_int.h"

/* By RG__RAILS_P_*. */
static const char *const rg__rails_policies[] = {
    "binding", "round-robin", "even", "weighted", "adaptive", NULL
};

int rg__rails_policy_find(const char *name)
{
    int i;

    for (i = 0; rg__rails_policies[i] != NULL; i++) {
        if (strcmp(name, rg__rails_policies[i]) == 0) {
            return i;
        }
    }
    return -1;
}

/* The best rail up for a control message or a piece sent again. */
int rg__rails_best(rg__rails_t *rl, int peer)
{
    const double *w = rl->peers[peer].w;
    int           r, best = -1;

    for (r = 0; r < rl->nrails; r++) {
        if (rg__rails_up(rl, r) && (best < 0 || w[r] > w[best])) {
            best = r;
        }
    }
    return best < 0 ? 0 : best;
}

/* The rail of a message that goes whole. */
int rg__rails_one(rg__rails_t *rl, int peer)
{
    int r, k;

    switch (rl->policy) {
    case RG__RAILS_P_BINDING:
        r = (rl->super.rank + peer) % rl->nrails;
        for (k = 0; k < rl->nrails && !rg__rails_up(rl, (r + k) % rl->nrails); k++) {
        }
        return (r + k) % rl->nrails;
    case RG__RAILS_P_RR:
        for (k = 0; k < rl->nrails; k++) {
            r = (int)(rl->rr_next++ % (unsigned)rl->nrails);
            if (rg__rails_up(rl, r)) {
                return r;
            }
        }
        return 0;
    default:
        return rg__rails_best(rl, peer);
    }
}

/* The bytes of a message of len bytes to peer that each rail carries
 * (cut[r], 0: none): all on one rail (binding, round-robin, or below the
 * stripe size), else stripes in proportion to the weights, whole 4 KiB pages
 * but the last; the rounding goes to the last rail with a share. */
void rg__rails_cut(rg__rails_t *rl, int peer, size_t len, size_t cut[RG__RAILS_MAX])
{
    const double *w   = rl->peers[peer].w;
    uint64_t      off = 0, part;
    int           r;

    memset(cut, 0, RG__RAILS_MAX * sizeof(cut[0]));
    if (rl->policy == RG__RAILS_P_BINDING || rl->policy == RG__RAILS_P_RR ||
        len < rl->cfg.stripe_min) {
        cut[rg__rails_one(rl, peer)] = len;
        return;
    }
    for (r = 0; r < rl->nrails; r++) {
        part   = (uint64_t)floor((double)len * w[r]) & ~(uint64_t)4095;
        cut[r] = off + part > len ? len - off : part;
        off   += cut[r];
    }
    for (r = rl->nrails - 1; r >= 0 && off < len; r--) {
        if (w[r] > 0) {
            cut[r] += len - off;
            off     = len;
        }
    }
}

/* The weights of the open, w[0..nrails) of sum sum, for every peer. */
void rg__rails_weights_init(rg__rails_t *rl, const double *w, double sum)
{
    int i, j;

    for (j = 0; j < rl->nrails; j++) {
        rl->w0[j] = w[j] / sum;
    }
    for (i = 0; i < rl->super.size; i++) {
        for (j = 0; j < rl->nrails; j++) {
            rl->peers[i].w[j] = rl->w0[j];
        }
    }
}

/* Rail r is down (left rails are up): the weights to pp over the rails
 * left, in proportion to theirs, or equal where they had none. */
void rg__rails_weights_down(const rg__rails_t *rl, rg__rpeer_t *pp, int r, int left)
{
    double tot = 0;
    int    k;

    pp->w[r] = 0;
    for (k = 0; k < rl->nrails; k++) {
        tot += pp->w[k];
    }
    for (k = 0; k < rl->nrails; k++) {
        pp->w[k] = tot > 0 ? pp->w[k] / tot : (double)((rl->alive >> k) & 1u) / left;
    }
}

/* Rail r is back: the weights of the open over the rails up; adaptive keeps
 * what it learnt of the others and gives the rail back its first share. */
void rg__rails_weights_back(const rg__rails_t *rl, rg__rpeer_t *pp, int r)
{
    double tot;
    int    k;

    for (k = 0; k < rl->nrails; k++) {
        if (k == r || rl->policy != RG__RAILS_P_ADAPTIVE) {
            pp->w[k] = rl->w0[k];
        }
    }
    for (tot = 0, k = 0; k < rl->nrails; k++) {
        tot += rg__rails_up(rl, k) ? pp->w[k] : 0.0;
    }
    for (k = 0; k < rl->nrails; k++) {
        pp->w[k] = rg__rails_up(rl, k) && tot > 0 ? pp->w[k] / tot : 0.0;
    }
}
