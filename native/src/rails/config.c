/*
 * railgauge: the rails transport's settings (config table RAILS, env
 * RG_RAILS_*) and their checks, done on every rank before the collective
 * open.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rails/rails_int.h"

static const rg_config_field_t rg__rails_config_fields[] = {
    {"LIST", "",
     "the rails, comma-separated: each an interface name, a numeric address or a "
     "CIDR subnet that the rail's transport instance binds to (OVER:<item>); two "
     "or more, no duplicates",
     offsetof(rg__rails_config_t, list), RG_CONFIG_STRING},
    {"OVER", "tcp", "the transport of every rail: tcp (rail X is tcp:X) or ofi:<provider> "
     "(rail X is ofi:<provider>@X)",
     offsetof(rg__rails_config_t, over), RG_CONFIG_STRING},
    {"POLICY", "even",
     "binding, round-robin, even, weighted or adaptive (see docs/transports.md)",
     offsetof(rg__rails_config_t, policy), RG_CONFIG_STRING},
    {"WEIGHTS", "",
     "weighted/adaptive: one positive weight per rail (bandwidths, any unit), "
     "comma-separated; empty: equal",
     offsetof(rg__rails_config_t, weights), RG_CONFIG_STRING},
    {"STRIPE_MIN", "256KiB",
     "messages below this stay whole on one rail (even, weighted, adaptive)",
     offsetof(rg__rails_config_t, stripe_min), RG_CONFIG_SIZE},
    {"INLINE", "8KiB",
     "messages up to this travel in one rail message with their header (one copy)",
     offsetof(rg__rails_config_t, inline_max), RG_CONFIG_SIZE},
    {"ADAPT_ALPHA", "0.3",
     "adaptive: weight of a new rate measurement in the smoothed weights (0 < a <= 1)",
     offsetof(rg__rails_config_t, alpha), RG_CONFIG_DOUBLE},
    {"ADAPT_FLOOR", "0.05",
     "adaptive: the smallest share of a message a rail keeps (0 <= f < 1/rails), so "
     "that a slowed rail is still measured and taken back",
     offsetof(rg__rails_config_t, floor), RG_CONFIG_DOUBLE},
    {"FAILOVER", "1",
     "1: a rail that fails is closed and its unacknowledged traffic sent again on the "
     "others (sends of striped messages complete when the receiver has acknowledged "
     "them); 0: a failed rail fails the transport",
     offsetof(rg__rails_config_t, failover), RG_CONFIG_INT},
    {"CHUNK", "4MiB",
     "stripes go in pieces of at most this (64 KiB or more): what a failed rail's "
     "traffic costs to send again is at most the pieces in flight on it",
     offsetof(rg__rails_config_t, chunk), RG_CONFIG_SIZE},
    {"RETRY", "1s",
     "failover: how long after a rail failed rank 0 first tries to take it back into use "
     "(each rank opens the rail's transport anew, its addresses exchanged over the rails "
     "still up), and again after each failed try, the wait doubling up to 30 s; it tries "
     "only while its own end of the rail has a carrier; 0: a failed rail stays down",
     offsetof(rg__rails_config_t, retry_ns), RG_CONFIG_TIME_NS},
    {"FAULT", "",
     "fault injection for tests: RANK:RAIL:BYTES[,...] fails rail RAIL at rank RANK once it "
     "has sent BYTES bytes, as if its transport had erred",
     offsetof(rg__rails_config_t, fault), RG_CONFIG_STRING},
    {NULL, NULL, NULL, 0, 0}
};

const rg_config_table_t rg_rails_config_table = {"RAILS", rg__rails_config_fields};

/* RG_RAILS_POLICY, RG_RAILS_OVER and RG_RAILS_LIST: the policy and the
 * rails' names (rl->rname: OVER:<item>, or OVER@<item> for ofi). */
static rg_status_t rg__rails_parse_rails(rg__rails_t *rl, rg_err_t *err)
{
    rg__rails_config_t *cfg = &rl->cfg;
    char                buf[RG_CONFIG_STRING_MAX], *item, *save = NULL;
    int                 i, j;

    i = rg__rails_policy_find(cfg->policy);
    if (i < 0) {
        return rg_err_set(err, RG_ERR_INVALID,
                          "RG_RAILS_POLICY='%s' is not a policy; the policies are binding, "
                          "round-robin, even, weighted and adaptive", cfg->policy);
    }
    rl->policy = i;
    if (strcmp(cfg->over, "tcp") != 0 &&
        (strncmp(cfg->over, "ofi:", 4) != 0 || cfg->over[4] == '\0' ||
         strchr(cfg->over, '@') != NULL)) {
        return rg_err_set(err, RG_ERR_INVALID,
                          "RG_RAILS_OVER='%s': rails run over tcp or ofi:<provider> (one "
                          "instance per rail)", cfg->over);
    }
    if (cfg->list[0] == '\0') {
        return rg_err_set(err, RG_ERR_INVALID,
                          "the rails transport needs RG_RAILS_LIST, its rails (interfaces, "
                          "addresses or subnets), e.g. RG_RAILS_LIST=rail0,rail1");
    }
    memcpy(buf, cfg->list, sizeof(buf));
    for (item = strtok_r(buf, ",", &save); item != NULL; item = strtok_r(NULL, ",", &save)) {
        while (*item == ' ') {
            item++;
        }
        if (*item == '\0') {
            return rg_err_set(err, RG_ERR_INVALID, "RG_RAILS_LIST='%s' has an empty item",
                              cfg->list);
        }
        if (rl->nrails == RG__RAILS_MAX) {
            return rg_err_set(err, RG_ERR_RANGE, "RG_RAILS_LIST has more than %d rails",
                              RG__RAILS_MAX);
        }
        snprintf(rl->rname[rl->nrails], sizeof(rl->rname[0]), "%s%s%s", cfg->over,
                 strcmp(cfg->over, "tcp") == 0 ? ":" : "@", item);
        for (j = 0; j < rl->nrails; j++) {
            if (strcmp(rl->rname[j], rl->rname[rl->nrails]) == 0) {
                return rg_err_set(err, RG_ERR_INVALID,
                                  "RG_RAILS_LIST='%s' names rail '%s' twice", cfg->list, item);
            }
        }
        rl->nrails++;
    }
    return RG_OK;
}

/* RG_RAILS_WEIGHTS (equal where empty, and under the even policy): the
 * weights of the open. */
static rg_status_t rg__rails_parse_weights(rg__rails_t *rl, rg_err_t *err)
{
    rg__rails_config_t *cfg = &rl->cfg;
    char                buf[RG_CONFIG_STRING_MAX], *item, *save = NULL, *end;
    double              w[RG__RAILS_MAX], sum = 0;
    int                 i, nw = 0;

    if (cfg->weights[0] != '\0') {
        memcpy(buf, cfg->weights, sizeof(buf));
        for (item = strtok_r(buf, ",", &save); item != NULL;
             item = strtok_r(NULL, ",", &save)) {
            if (nw == RG__RAILS_MAX) {
                break;
            }
            w[nw] = strtod(item, &end);
            if (end == item || *end != '\0' || !(w[nw] > 0) || !isfinite(w[nw])) {
                return rg_err_set(err, RG_ERR_INVALID,
                                  "RG_RAILS_WEIGHTS='%s': '%s' is not a weight above zero",
                                  cfg->weights, item);
            }
            sum += w[nw++];
        }
        if (nw != rl->nrails) {
            return rg_err_set(err, RG_ERR_INVALID,
                              "RG_RAILS_WEIGHTS='%s' has %d weights for %d rails",
                              cfg->weights, nw, rl->nrails);
        }
    } else {
        for (i = 0; i < rl->nrails; i++) {
            w[i] = 1.0;
        }
        sum = rl->nrails;
    }
    if (rl->policy == RG__RAILS_P_EVEN) {
        for (i = 0; i < rl->nrails; i++) {
            w[i] = 1.0;
        }
        sum = rl->nrails;
    }
    rg__rails_weights_init(rl, w, sum);
    return RG_OK;
}

/* The sizes, the adaptive policy's constants, failover and its retry. */
static rg_status_t rg__rails_parse_limits(rg__rails_t *rl, rg_err_t *err)
{
    rg__rails_config_t *cfg = &rl->cfg;

    if (cfg->inline_max > RG__RAILS_INLINE_MAX) {
        return rg_err_set(err, RG_ERR_RANGE, "RG_RAILS_INLINE=%zu is above 1 MiB",
                          cfg->inline_max);
    }
    if (!(cfg->alpha > 0 && cfg->alpha <= 1)) {
        return rg_err_set(err, RG_ERR_RANGE, "RG_RAILS_ADAPT_ALPHA=%g is outside (0, 1]",
                          cfg->alpha);
    }
    if (!(cfg->floor >= 0 && cfg->floor * rl->nrails < 1)) {
        return rg_err_set(err, RG_ERR_RANGE,
                          "RG_RAILS_ADAPT_FLOOR=%g: the floor times the %d rails must be "
                          "below 1", cfg->floor, rl->nrails);
    }
    if (cfg->failover != 0 && cfg->failover != 1) {
        return rg_err_set(err, RG_ERR_INVALID, "RG_RAILS_FAILOVER=%d: 1 (on) or 0 (off)",
                          cfg->failover);
    }
    rl->fo = cfg->failover;
    if (!(cfg->retry_ns == 0 || (cfg->retry_ns >= 10e6 && cfg->retry_ns <= 3600e9))) {
        return rg_err_set(err, RG_ERR_RANGE,
                          "RG_RAILS_RETRY=%gns is outside 10ms .. 1h (0: a failed rail stays "
                          "down)", cfg->retry_ns);
    }
    if (cfg->chunk < 65536) {
        return rg_err_set(err, RG_ERR_RANGE, "RG_RAILS_CHUNK=%zu is below 64 KiB", cfg->chunk);
    }
    return RG_OK;
}

/* RG_RAILS_FAULT (tests): the rails of this rank that fail after so many
 * bytes sent (rl->fault_at). */
static rg_status_t rg__rails_parse_fault(rg__rails_t *rl, rg_err_t *err)
{
    rg__rails_config_t *cfg = &rl->cfg;
    char                fbuf[RG_CONFIG_STRING_MAX], *it, *sv = NULL, *e1, *e2, *e3;
    long                fr, fl;
    int                 ok;
    unsigned long long  fb;

    if (cfg->fault[0] == '\0') {
        return RG_OK;
    }
    memcpy(fbuf, cfg->fault, sizeof(fbuf));
    for (it = strtok_r(fbuf, ",", &sv); it != NULL; it = strtok_r(NULL, ",", &sv)) {
        fl = -1;
        fb = 0;
        fr = strtol(it, &e1, 10);
        ok = e1 != it && *e1 == ':' && fr >= 0;
        if (ok) {
            fl = strtol(e1 + 1, &e2, 10);
            ok = e2 != e1 + 1 && *e2 == ':' && fl >= 0 && fl < rl->nrails;
        }
        if (ok) {
            fb = strtoull(e2 + 1, &e3, 10);
            ok = e3 != e2 + 1 && *e3 == '\0';
        }
        if (!ok) {
            return rg_err_set(err, RG_ERR_INVALID,
                              "RG_RAILS_FAULT='%s': '%s' is not RANK:RAIL:BYTES with RAIL "
                              "below %d", cfg->fault, it, rl->nrails);
        }
        if (fr == rl->super.rank) {
            rl->fault_at[fl] = fb > 0 ? fb : 1;
        }
    }
    return RG_OK;
}

/* Checks the settings loaded into rl->cfg and fills in what follows from
 * them (the policy, the rails' names, the weights, failover, faults); the
 * first bad one gives its error, naming the variable. */
rg_status_t rg__rails_parse(rg__rails_t *rl, rg_err_t *err)
{
    rg_status_t status;

    status = rg__rails_parse_rails(rl, err);
    if (status == RG_OK) {
        status = rg__rails_parse_weights(rl, err);
    }
    if (status == RG_OK) {
        status = rg__rails_parse_limits(rl, err);
    }
    if (status == RG_OK) {
        status = rg__rails_parse_fault(rl, err);
    }
    return status;
}
