/*
 * railgauge: the rails transport's open (every rail's transport opened,
 * collectively, and a header receive posted on every subchannel), close
 * (goodbyes, so that a peer takes the end of file for a close), its facts
 * (info_json), its ops table and its registration with xport.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/timer.h"
#include "boot/boot.h"
#include "rails/rails_int.h"

static void rg__rout_destroy(rg__rout_t *o)
{
    free(o->copy);
    free(o->parts);
    free(o);
}

static void rg__rsub_destroy(rg__rsub_t *s)
{
    free(s->stage);
    free(s);
}

static void rg__rmsg_destroy(rg__rmsg_t *m)
{
    free(m->tmp);
    free(m->offs);
    free(m);
}

/* Says goodbye on every (rail up, peer), so that the peers take this rank's
 * end of file as a close, not a failure, and waits for the peers' goodbyes
 * (what this rank sent them is then in: a closed socket with bytes unread
 * resets the connection, which would look like a failed rail to a peer
 * still at work); gives up after a second. */
static void rg__rails_bye(rg__rails_t *rl)
{
    rg__rsub_t *s;
    uint64_t    deadline = rg_time_mono_ns() + 1000000000ull;
    int         r, peer, pending;

    for (r = 0; r < rl->nrails; r++) {
        for (peer = 0; peer < rl->super.size && rg__rails_up(rl, r); peer++) {
            if (peer == rl->super.rank || (s = rg__rsub_get(rl, RG__RAILS_HDR)) == NULL) {
                continue;
            }
            rg__rails_hdr(rl, peer, s->stage, RG__RAILS_T_BYE, 0, 0, 0, 0);
            if (rg__rails_post(rl, r, peer, s, s->stage, RG__RAILS_HDR, NULL) != RG_OK) {
                return;
            }
        }
    }
    do {
        if (rg__rails_progress(&rl->super) != RG_OK) {
            return;
        }
        pending = 0;
        for (r = 0; r < rl->nrails; r++) {
            for (s = rl->inflight[r]; s != NULL; s = s->next) {
                pending |= s->x.status == RG_INPROGRESS;
            }
        }
        for (peer = 0; peer < rl->super.size && !pending; peer++) {
            pending = peer != rl->super.rank &&
                      (rl->peers[peer].byes & rl->alive) != rl->alive;
        }
    } while (pending && rg_time_mono_ns() < deadline);
}

/* Frees the transport and all it holds (its rails' transports closed). */
static void rg__rails_free(rg__rails_t *rl)
{
    rg__rsub_t *s;
    rg__rmsg_t *m;
    rg__rout_t *o;
    int         r, i;

    /* Acknowledged messages that requests in flight still read go with the
     * last of them; the others with their peer's list. */
    for (r = 0; r < RG__RAILS_MAX; r++) {
        for (s = rl->inflight[r]; s != NULL; s = s->next) {
            if ((o = s->rout) != NULL && o->acked && --o->live == 0) {
                rg__rout_destroy(o);
            }
        }
    }
    for (i = 0; rl->peers != NULL && i < rl->super.size; i++) {
        while ((o = rl->peers[i].outs) != NULL) {
            rl->peers[i].outs = o->next;
            if (o->stage != NULL && !o->stage->live) {
                rg__rsub_destroy(o->stage);
            }
            rg__rout_destroy(o);
        }
    }
    while ((o = rl->free_outs) != NULL) {
        rl->free_outs = o->next;
        rg__rout_destroy(o);
    }
    for (r = 0; r < RG__RAILS_MAX; r++) {
        if (rl->rail[r] != NULL) {
            rg_xport_close(rl->rail[r]);
        }
        while ((s = rl->inflight[r]) != NULL) {
            rl->inflight[r] = s->next;
            rg__rsub_destroy(s);
        }
    }
    while ((s = rl->free_subs) != NULL) {
        rl->free_subs = s->next;
        rg__rsub_destroy(s);
    }
    for (i = 0; rl->peers != NULL && i < rl->super.size; i++) {
        while ((m = rl->peers[i].msgs) != NULL) {
            rl->peers[i].msgs = m->next;
            rg__rmsg_destroy(m);
        }
    }
    while ((m = rl->free_msgs) != NULL) {
        rl->free_msgs = m->next;
        rg__rmsg_destroy(m);  /* (its tmp is NULL: rg__rails_msg_free) */
    }
    for (i = 0; rl->rx != NULL && i < rl->nrails * rl->super.size; i++) {
        free(rl->rx[i].hbuf);
    }
    free(rl->rx);
    free(rl->pfds);
    free(rl->peers);
    free(rl);
}

/* Closes the transport: lets go of the tries to take rails back, says
 * goodbye where it is open and whole, and frees it. */
static void rg__rails_close(rg_xport_t *xp)
{
    rg__rails_t *rl = rg__rails(xp);
    int          r;

    rl->closing = 1;
    for (r = 0; r < rl->nrails; r++) {
        rg__rails_rejoin_drop(rl, r);
    }
    if (rl->opened && rl->failed == RG_OK) {
        rg__rails_bye(rl);
    }
    rg__rails_free(rl);
}

static rg_status_t rg__rails_open(const char *name, rg_boot_t *boot, rg_xport_t **xp_p,
                                  rg_err_t *err)
{
    rg__rails_t *rl;
    rg_status_t  status;
    int          size = rg_boot_size(boot), r, peer;

    (void)name;
    rl = calloc(1, sizeof(*rl));
    if (rl == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "cannot allocate the rails transport");
    }
    rl->super.ops               = &rg_rails_ops;
    rl->super.attr.name         = "rails";
    rl->super.attr.max_msg_size = SIZE_MAX;
    rl->super.attr.why_not[RG_XPORT_OPT_LIST] =
        "the rails transport posts each message by its policy; it has no list post";
    rl->super.attr.why_not[RG_XPORT_OPT_INJECT] =
        "the rails transport has no inline send (small messages are one rail message)";
    rl->super.attr.why_not[RG_XPORT_OPT_WIN] =
        "the rails transport has no one-sided writes";
    rl->super.boot = boot;
    rl->super.rank = rg_boot_rank(boot);
    rl->super.size = size;
    rl->peers      = calloc((size_t)size, sizeof(*rl->peers));
    if (rl->peers == NULL) {
        free(rl);
        return rg_err_set(err, RG_ERR_NOMEM, "cannot allocate %d rails peers", size);
    }
    /* Settings are checked on every rank before the collective opens; a
     * rank with a bad setting fails here, the others in the first rail's
     * open when it does not come (the bootstrap reports the dead rank). */
    status = rg_config_load(&rg_rails_config_table, &rl->cfg, err);
    if (status == RG_OK) {
        status = rg__rails_parse(rl, err);
    }
    if (status != RG_OK) {
        rg__rails_close(&rl->super);
        return status;
    }
    rl->hcap  = RG__RAILS_HDR + (rl->cfg.inline_max > RG__RAILS_BLOB_MAX ? rl->cfg.inline_max
                                                                         : RG__RAILS_BLOB_MAX);
    rl->rx    = calloc((size_t)rl->nrails * (size_t)size, sizeof(*rl->rx));
    rl->npfds = (size_t)rl->nrails * (size_t)size;
    rl->pfds  = calloc(rl->npfds, sizeof(*rl->pfds));
    if (rl->rx == NULL || rl->pfds == NULL) {
        rg__rails_close(&rl->super);
        return rg_err_set(err, RG_ERR_NOMEM, "cannot allocate the rails receive state");
    }
    for (r = 0; r < rl->nrails; r++) {
        status = rg_xport_open(rl->rname[r], boot, &rl->rail[r], err);
        if (status != RG_OK) {
            char why[RG_ERR_MSG_MAX];

            /* Copied first: the message is formatted into the same err. */
            snprintf(why, sizeof(why), "%s", rg_err_message(err));
            rg_err_set(err, status, "rail %d (%s): %s", r, rl->rname[r], why);
            rg__rails_close(&rl->super);
            return status;
        }
    }
    for (r = 0; r < rl->nrails; r++) {
        for (peer = 0; peer < size; peer++) {
            rg__rrx_t *x = rg__rails_rx(rl, r, peer);

            if (peer == rl->super.rank) {
                continue;
            }
            x->hbuf = malloc(rl->hcap);
            if (x->hbuf == NULL) {
                rg__rails_close(&rl->super);
                return rg_err_set(err, RG_ERR_NOMEM, "cannot allocate rails header buffers");
            }
            status = rg__rails_post_hdr(rl, r, peer);
            if (status != RG_OK) {
                rg_err_set(err, status, "%s", rg_err_message(&rl->super.err));
                rg__rails_close(&rl->super);
                return status;
            }
        }
    }
    rl->alive  = (1u << rl->nrails) - 1u;
    rl->t0_ns  = rg_time_mono_ns();
    rl->opened = 1;
    *xp_p      = &rl->super;
    return RG_OK;
}

static rg_status_t rg__rails_info_json(rg_xport_t *xp, char *buf, size_t cap)
{
    rg__rails_t *rl = rg__rails(xp);
    rg_json_t    js;
    char         sub[512];
    int          r, peer = xp->rank == 0 ? 1 : 0;

    rg_json_init(&js, buf, cap);
    rg_json_object_begin(&js);
    rg_json_kv_string(&js, "policy", rl->cfg.policy);
    rg_json_kv_uint(&js, "stripe_min", rl->cfg.stripe_min);
    rg_json_kv_uint(&js, "inline", rl->cfg.inline_max);
    rg_json_kv_uint(&js, "rate_messages", rl->rate_msgs);
    rg_json_kv_bool(&js, "failover", rl->fo);
    if (rl->fo) {
        rg_json_kv_uint(&js, "chunk", rl->cfg.chunk);
        rg_json_kv_uint(&js, "acks_sent", rl->acks_sent);
        rg_json_kv_uint(&js, "failovers", rl->failovers);
        rg_json_kv_uint(&js, "resent_bytes", rl->resent_bytes);
        rg_json_kv_uint(&js, "resent_pieces", rl->resent_pieces);
        rg_json_kv_uint(&js, "duplicate_pieces", rl->dup_pieces);
        rg_json_kv_double(&js, "retry_s", rl->cfg.retry_ns * 1e-9);
        rg_json_kv_uint(&js, "rejoin_tries", rl->rejoin_tries);
        rg_json_kv_uint(&js, "recoveries", rl->recoveries);
        rg_json_key(&js, "events");
        rg_json_array_begin(&js);
        for (r = 0; r < rl->nevents; r++) {
            rg_json_object_begin(&js);
            rg_json_kv_double(&js, "t_s", rl->events[r].t_s);
            rg_json_kv_int(&js, "rail", rl->events[r].rail);
            rg_json_kv_string(&js, "what", rl->events[r].what);
            rg_json_kv_string(&js, "why", rl->events[r].why);
            rg_json_object_end(&js);
        }
        rg_json_array_end(&js);
    }
    rg_json_key(&js, "rails");
    rg_json_array_begin(&js);
    for (r = 0; r < rl->nrails; r++) {
        rg_json_object_begin(&js);
        rg_json_kv_string(&js, "name", rl->rname[r]);
        rg_json_kv_uint(&js, "bytes_sent", rl->sent_bytes[r]);
        rg_json_kv_uint(&js, "bytes_received", rl->recv_bytes[r]);
        if (peer < xp->size) {
            rg_json_kv_double(&js, "weight", rl->peers[peer].w[r]);
            rg_json_kv_double(&js, "receive_rate_MBps", rl->peers[peer].rate[r] * 1e3);
        }
        rg_json_kv_string(&js, "state", (rl->alive >> r) & 1u ? "up" : "down");
        rg_json_kv_uint(&js, "epoch", rl->epoch[r]);
        if (rl->rail[r] != NULL &&
            rl->rail[r]->ops->info_json(rl->rail[r], sub, sizeof(sub)) == RG_OK) {
            rg_json_key(&js, "transport_info");
            rg_json_raw(&js, sub);
        }
        rg_json_object_end(&js);
    }
    rg_json_array_end(&js);
    rg_json_object_end(&js);
    return js.status;
}

const rg_xport_ops_t rg_rails_ops = {
    .name        = "rails",
    .description = "several tcp rails side by side (RG_RAILS_LIST), messages striped or "
                   "placed by a policy (RG_RAILS_POLICY)",
    .open        = rg__rails_open,
    .close       = rg__rails_close,
    .isend       = rg__rails_isend,
    .irecv       = rg__rails_irecv,
    .progress    = rg__rails_progress,
    .block       = rg__rails_block,
    .info_json   = rg__rails_info_json,
    .get         = rg_xport_no_get,
};

rg_status_t rg_rails_register(void)
{
    return rg_xport_register(&rg_rails_ops, &rg_rails_config_table);
}
