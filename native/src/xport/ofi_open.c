/*
 * railgauge: the ofi transport's open and close: the provider from the name,
 * fi_getinfo, the endpoint and its CQ and AV, the exchange of endpoint names
 * over the bootstrap, the greetings of open; and its config table. The
 * design is described at the top of ofi.c.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/timer.h"
#include "base/wire.h"
#include "xport/netaddr.h"
#include "xport/ofi.h"

#define RG__OFI_API_VERSION FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION)

#define RG__OFI_MIN_HEAD   ((size_t)64)
#define RG__OFI_MIN_FRAG   ((size_t)64 << 10)
#define RG__OFI_RECORD_LEN 48u
#define RG__OFI_REC_RMA    1u   /* record flag: the endpoint has FI_RMA */

typedef struct rg__ofi_config {
    int    inject;
    char   domain[RG_CONFIG_STRING_MAX];
    size_t head_size;
    size_t frag_size;
    int    wait;
    char   iface[RG_CONFIG_STRING_MAX];
    char   subnet[RG_CONFIG_STRING_MAX];
    double connect_timeout_ns;
    int    send_safe;
    int    rma;
} rg__ofi_config_t;

static const rg_config_field_t rg__ofi_config_fields[] = {
    {"INJECT", "1",
     "1: messages up to the provider's inject_size go out with fi_tinjectdata and "
     "complete at post time, where SEND_SAFE allows; 0: every send completes "
     "through the CQ",
     offsetof(rg__ofi_config_t, inject), RG_CONFIG_INT},
    {"SEND_SAFE", "1",
     "1: over providers that may keep a completed send in this process until later "
     "calls into libfabric (rxd: its retransmissions; tcp: its inject queue and "
     "staging send buffer) no fi_tinjectdata, and tcp's staging buffer off "
     "(FI_TCP_STAGING_SBUF_SIZE=0 unless set), so that a completed send needs "
     "nothing more from the sender, as xport.h promises; 0: the providers' "
     "defaults, where a sender must keep calling progress until its peers have "
     "its messages",
     offsetof(rg__ofi_config_t, send_safe), RG_CONFIG_INT},
    {"DOMAIN", "",
     "libfabric domain (NIC, port or interface: mlx5_0, efa_0, cxi0, lo) to open; "
     "this pins a rail to one device; empty takes the provider's first",
     offsetof(rg__ofi_config_t, domain), RG_CONFIG_STRING},
    {"HEAD_SIZE", "16KiB",
     "messages shorter than this are one libfabric message; longer ones are a head "
     "of this size and a tail; a receive smaller than this takes the head in a "
     "bounce buffer of this size; 64 bytes up to FRAG_SIZE",
     offsetof(rg__ofi_config_t, head_size), RG_CONFIG_SIZE},
    {"FRAG_SIZE", "0",
     "longest libfabric message: a longer tail goes as several, reassembled in "
     "place; 0 takes the provider's max_msg_size; at least 64KiB",
     offsetof(rg__ofi_config_t, frag_size), RG_CONFIG_SIZE},
    {"WAIT", "0",
     "1: the CQ gets a wait object and waiting sleeps in fi_cq_sread (for "
     "providers whose sread honours its timeout and drives progress; in libfabric "
     "1.17 shm's and udp's do not); 0: waiting naps 100us at a time",
     offsetof(rg__ofi_config_t, wait), RG_CONFIG_INT},
    {"IFACE", "",
     "bind the endpoint to this interface's address (eth1, ib0, rail0), for "
     "providers addressed by IP (tcp, udp, verbs over IPoIB): the setting for "
     "ranks on several hosts or network namespaces, each of which finds its own "
     "address; IPv4 before IPv6; ignored by other providers (shm)",
     offsetof(rg__ofi_config_t, iface), RG_CONFIG_STRING},
    {"SUBNET", "",
     "bind the endpoint to the address this host has inside this subnet (CIDR: "
     "10.1.0.0/16, fd00::/64), alone or to choose among IFACE's addresses; for "
     "providers addressed by IP, as IFACE",
     offsetof(rg__ofi_config_t, subnet), RG_CONFIG_STRING},
    {"CONNECT_TIMEOUT", "30s",
     "how long open waits for every peer's greeting (connections are made then) "
     "before it fails naming the peer and its address (an unreachable address, "
     "or a path that drops packets)",
     offsetof(rg__ofi_config_t, connect_timeout_ns), RG_CONFIG_TIME_NS},
    {"RMA", "1",
     "1: ask the chosen provider for one-sided writes (FI_RMA) too, for memory "
     "windows (rg_xport_win_*: railgauge-bench onen's rma mode), keeping the "
     "endpoint without them where the provider has none or some rank lacks them; "
     "0: never ask (no windows)",
     offsetof(rg__ofi_config_t, rma), RG_CONFIG_INT},
    {NULL, NULL, NULL, 0, 0}
};

const rg_config_table_t rg_xport_ofi_config_table = {"OFI", rg__ofi_config_fields};

/* 1 for the tcp provider, alone or under a utility provider ("tcp;ofi_rxm"):
 * it copies small sends into a staging buffer or queue of this process and
 * completes them, and writes them to the socket only when called again. */
static int rg__ofi_is_tcp(const char *prov_name)
{
    return prov_name != NULL && strncmp(prov_name, "tcp", 3) == 0 &&
           (prov_name[3] == '\0' || prov_name[3] == ';');
}

/* Short names for the usual providers. */
static const struct {
    const char *alias;
    const char *provider;
} rg__ofi_aliases[] = {
    {"tcp", "tcp;ofi_rxm"},
    {"udp", "udp;ofi_rxd"},
    {"verbs", "verbs;ofi_rxm"},
    {"shm", "shm"},
    {"efa", "efa"},
    {"cxi", "cxi"},
    {NULL, NULL}
};


/* The provider of "ofi", "ofi:<provider>" or "ofi:<provider>@<where>" (its
 * alias resolved; buf holds a name that is not an alias): NULL for "ofi". */
static const char *rg__ofi_provider_of(const char *name, char *buf, size_t cap)
{
    const char *variant, *at;
    size_t      i, n;

    if (strcmp(name, "ofi") == 0) {
        return NULL;
    }
    variant = name + strlen("ofi:");
    at      = strchr(variant, '@');
    n       = at != NULL ? (size_t)(at - variant) : strlen(variant);
    if (n >= cap) {
        n = cap - 1;
    }
    memcpy(buf, variant, n);
    buf[n] = '\0';
    for (i = 0; rg__ofi_aliases[i].alias != NULL; i++) {
        if (strcmp(buf, rg__ofi_aliases[i].alias) == 0) {
            return rg__ofi_aliases[i].provider;
        }
    }
    return buf;
}

/* "ofi:<provider>@<where>" (several instances side by side, one per rail, as
 * tcp:<where>): <where> replaces RG_OFI_IFACE and RG_OFI_SUBNET for this
 * instance: a CIDR subnet (contains '/'), a numeric address (the subnet of
 * that one address), or else an interface name. */
static rg_status_t rg__ofi_variant_where(const char *name, rg__ofi_config_t *cfg,
                                         rg_err_t *err)
{
    const char   *at = strchr(name, '@'), *where;
    unsigned char ip[16];
    size_t        n;

    if (at == NULL) {
        return RG_OK;
    }
    where = at + 1;
    n     = strlen(where);
    if (n == 0 || n + 4 >= RG_CONFIG_STRING_MAX || at == name + strlen("ofi:")) {
        return rg_err_set(err, RG_ERR_INVALID, "transport '%s': expected "
                          "ofi:<provider>@<interface|address|subnet>", name);
    }
    cfg->iface[0] = cfg->subnet[0] = '\0';
    if (strchr(where, '/') != NULL) {
        memcpy(cfg->subnet, where, n + 1);
    } else if (inet_pton(AF_INET, where, ip) == 1) {
        snprintf(cfg->subnet, sizeof(cfg->subnet), "%s/32", where);
    } else if (inet_pton(AF_INET6, where, ip) == 1) {
        snprintf(cfg->subnet, sizeof(cfg->subnet), "%s/128", where);
    } else {
        memcpy(cfg->iface, where, n + 1);
    }
    return RG_OK;
}

/* Hints for fi_getinfo; strict adds what only the matching needs (in-order
 * sends, directed receives, CQ data), so that a failure can say which is
 * missing. */
static struct fi_info *rg__ofi_hints(const char *provider, const char *domain, int strict)
{
    struct fi_info *hints = fi_allocinfo();

    if (hints == NULL) {
        return NULL;
    }
    hints->caps                   = FI_TAGGED;
    hints->mode                   = FI_CONTEXT | FI_CONTEXT2;
    hints->ep_attr->type          = FI_EP_RDM;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    /* Modes that only matter for memory registration (done only for the
     * memory windows of one-sided writes, which honour them) are accepted,
     * so that providers asking for them qualify; FI_MR_LOCAL is not: no
     * descriptors are passed. */
    hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY |
                                  FI_MR_ENDPOINT;
    if (strict) {
        hints->caps                    |= FI_DIRECTED_RECV;
        hints->tx_attr->msg_order       = FI_ORDER_SAS;
        hints->rx_attr->msg_order       = FI_ORDER_SAS;
        hints->domain_attr->cq_data_size = 4;
    }
    if ((provider != NULL && (hints->fabric_attr->prov_name = strdup(provider)) == NULL) ||
        (domain != NULL && domain[0] != '\0' &&
         (hints->domain_attr->name = strdup(domain)) == NULL)) {
        fi_freeinfo(hints);
        return NULL;
    }
    return hints;
}

/* Appends the distinct provider names of list to buf. */
static size_t rg__ofi_names(const struct fi_info *list, char *buf, size_t cap, size_t used)
{
    const struct fi_info *a, *b;
    int                   n = 0;

    for (a = list; a != NULL && used < cap; a = a->next) {
        for (b = list; b != a; b = b->next) {
            if (strcmp(b->fabric_attr->prov_name, a->fabric_attr->prov_name) == 0) {
                break;
            }
        }
        if (b == a) {
            used += (size_t)snprintf(buf + used, cap - used, "%s%s", n++ > 0 ? ", " : "",
                                     a->fabric_attr->prov_name);
        }
    }
    if (n == 0 && used < cap) {
        used += (size_t)snprintf(buf + used, cap - used, "none");
    }
    return used;
}

/* The providers that qualify, then all that fi_getinfo finds; *known_p
 * says whether provider is among the latter. */
static void rg__ofi_list_providers(const char *provider, char *buf, size_t cap,
                                   int *known_p)
{
    struct fi_info *all = NULL, *rdm = NULL, *hints, *i;
    size_t          used;

    (void)fi_getinfo(RG__OFI_API_VERSION, NULL, NULL, 0, NULL, &all);
    hints = rg__ofi_hints(NULL, NULL, 1);
    if (hints != NULL) {
        (void)fi_getinfo(RG__OFI_API_VERSION, NULL, NULL, 0, hints, &rdm);
        fi_freeinfo(hints);
    }
    *known_p = provider == NULL;
    for (i = all; i != NULL && provider != NULL; i = i->next) {
        *known_p |= strcmp(i->fabric_attr->prov_name, provider) == 0;
    }
    used = (size_t)snprintf(buf, cap, "usable providers (RDM, tagged): ");
    used = rg__ofi_names(rdm, buf, cap, used);
    if (used < cap) {
        used += (size_t)snprintf(buf + used, cap - used, "; all providers found: ");
    }
    (void)rg__ofi_names(all, buf, cap, used);
    fi_freeinfo(rdm);
    fi_freeinfo(all);
}

/* Keeps the first entry of ofi->info in domain RG_OFI_DOMAIN: some
 * providers (tcp, shm in 1.17) ignore the domain name in the hints. */
static rg_status_t rg__ofi_pick_domain(rg__ofi_t *ofi, const rg__ofi_config_t *cfg,
                                       rg_err_t *err)
{
    struct fi_info *i, *pick;
    char            names[256];
    size_t          used = 0;

    if (cfg->domain[0] == '\0') {
        return RG_OK;
    }
    for (i = ofi->info; i != NULL; i = i->next) {
        if (i->domain_attr->name != NULL && strcmp(i->domain_attr->name, cfg->domain) == 0) {
            break;
        }
    }
    if (i == NULL) {
        names[0] = '\0';
        for (i = ofi->info; i != NULL && used < sizeof(names); i = i->next) {
            if (i->domain_attr->name != NULL &&
                strstr(names, i->domain_attr->name) == NULL) {
                used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%s",
                                         used > 0 ? ", " : "", i->domain_attr->name);
            }
        }
        return rg_err_set(err, RG_ERR_NOT_FOUND,
                          "transport '%s': provider %s has no domain '%s' (RG_OFI_DOMAIN); "
                          "its domains: %s", ofi->name, rg__ofi_prov(ofi), cfg->domain,
                          names);
    }
    pick = fi_dupinfo(i);
    if (pick == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "cannot copy an fi_info");
    }
    fi_freeinfo(ofi->info);
    ofi->info = pick;
    return RG_OK;
}

/* 1 where the subnet is one IPv4 loopback address ("127.x.y.z/32", what
 * ofi:<provider>@127.x.y.z sets), filled into *pick on lo. */
static int rg__ofi_loopback_host(const rg__ofi_config_t *cfg, rg_netaddr_t *pick)
{
    char   text[INET6_ADDRSTRLEN];
    size_t n = strlen(cfg->subnet);

    if (cfg->iface[0] != '\0' || n < 4 || n - 3 >= sizeof(text) ||
        strcmp(cfg->subnet + n - 3, "/32") != 0) {
        return 0;
    }
    memcpy(text, cfg->subnet, n - 3);
    text[n - 3] = '\0';
    memset(pick, 0, sizeof(*pick));
    if (inet_pton(AF_INET, text, pick->ip) != 1 || pick->ip[0] != 127) {
        return 0;
    }
    pick->family = AF_INET;
    memcpy(pick->text, text, n - 2);
    snprintf(pick->ifname, sizeof(pick->ifname), "lo");
    return 1;
}

/* With RG_OFI_IFACE or RG_OFI_SUBNET, asks fi_getinfo again for the address
 * they pick on this host as the source (FI_SOURCE), so that the endpoint
 * listens there and its name (what peers are told) carries it. Providers not
 * addressed by IP keep what they have. */
static rg_status_t rg__ofi_source(rg__ofi_t *ofi, const char *provider,
                                  const rg__ofi_config_t *cfg, rg_err_t *err)
{
    struct fi_info *hints, *info = NULL;
    rg_netaddr_t    pick;
    char            from[2 * RG_CONFIG_STRING_MAX + 48];
    size_t          used = 0;
    uint32_t        format = ofi->info->addr_format;
    rg_status_t     status;
    int             rc;

    if (cfg->iface[0] == '\0' && cfg->subnet[0] == '\0') {
        return RG_OK;
    }
    if (format != FI_SOCKADDR && format != FI_SOCKADDR_IN && format != FI_SOCKADDR_IN6) {
        return RG_OK;
    }
    status = rg_netaddr_pick(cfg->iface, cfg->subnet, "RG_OFI_IFACE", "RG_OFI_SUBNET", &pick,
                             err);
    if (status != RG_OK && rg__ofi_loopback_host(cfg, &pick)) {
        /* A loopback address of 127.0.0.0/8 that no interface lists (as
         * ofi:tcp@127.0.0.2, a second rail on one host) is still bound to
         * by the kernel, as tcp:127.0.0.2 is. */
        rg_err_clear(err);
        status = RG_OK;
    }
    if (status != RG_OK) {
        return status;
    }
    if (cfg->iface[0] != '\0') {
        used += (size_t)snprintf(from, sizeof(from), "RG_OFI_IFACE=%s", cfg->iface);
    }
    if (cfg->subnet[0] != '\0') {
        snprintf(from + used, sizeof(from) - used, "%sRG_OFI_SUBNET=%s", used > 0 ? ", " : "",
                 cfg->subnet);
    }
    hints = rg__ofi_hints(provider, cfg->domain, 1);
    if (hints == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "cannot allocate fi_getinfo hints");
    }
    hints->addr_format = pick.family == AF_INET6 ? FI_SOCKADDR_IN6 : FI_SOCKADDR_IN;
    rc = fi_getinfo(RG__OFI_API_VERSION, pick.text, NULL, FI_SOURCE, hints, &info);
    fi_freeinfo(hints);
    if (rc != 0) {
        return rg_err_set(err, RG_ERR_NOT_FOUND,
                          "transport '%s': provider %s offers no endpoint on %s (interface "
                          "%s, from %s) (fi_getinfo: %s)", ofi->name, rg__ofi_prov(ofi),
                          pick.text, pick.ifname, from, fi_strerror(-rc));
    }
    fi_freeinfo(ofi->info);
    ofi->info = info;
    if (asprintf(&ofi->source, "%s on %s (%s)", pick.text, pick.ifname, from) < 0) {
        ofi->source = NULL;
        return rg_err_set(err, RG_ERR_NOMEM, "cannot allocate an address text");
    }
    return RG_OK;
}

/* With RG_OFI_RMA=1, asks again for the provider, fabric, domain and source
 * address already chosen, now with FI_RMA, and keeps that answer where there
 * is one: the choice of provider never depends on RMA. */
static void rg__ofi_try_rma(rg__ofi_t *ofi)
{
    const struct fi_info *cur = ofi->info;
    struct fi_info       *hints, *list = NULL, *i, *pick = NULL;

    hints = rg__ofi_hints(cur->fabric_attr->prov_name, cur->domain_attr->name, 1);
    if (hints == NULL) {
        return;
    }
    hints->caps       |= FI_RMA;
    hints->addr_format = cur->addr_format;
    /* The source address pins the interface chosen (ofi:tcp on a rail). Not
     * for shm: its addresses are names made up per fi_getinfo, and asking for
     * the same name again gave a second endpoint of this process (the data
     * channel) a name in use: fi_enable failed with EBUSY now and then. */
    if (strcmp(cur->fabric_attr->prov_name, "shm") != 0 && cur->src_addr != NULL &&
        cur->src_addrlen > 0 && (hints->src_addr = malloc(cur->src_addrlen)) != NULL) {
        memcpy(hints->src_addr, cur->src_addr, cur->src_addrlen);
        hints->src_addrlen = cur->src_addrlen;
    }
    if (fi_getinfo(RG__OFI_API_VERSION, NULL, NULL, 0, hints, &list) == 0) {
        for (i = list; i != NULL; i = i->next) {
            if ((i->caps & FI_RMA) == FI_RMA &&
                strcmp(i->fabric_attr->prov_name, cur->fabric_attr->prov_name) == 0 &&
                (cur->fabric_attr->name == NULL ||
                 (i->fabric_attr->name != NULL &&
                  strcmp(i->fabric_attr->name, cur->fabric_attr->name) == 0)) &&
                (cur->domain_attr->name == NULL ||
                 (i->domain_attr->name != NULL &&
                  strcmp(i->domain_attr->name, cur->domain_attr->name) == 0))) {
                break;
            }
        }
        if (i != NULL) {
            pick = fi_dupinfo(i);
        }
    }
    fi_freeinfo(list);
    fi_freeinfo(hints);
    if (pick != NULL) {
        fi_freeinfo(ofi->info);
        ofi->info = pick;
    }
}

static rg_status_t rg__ofi_getinfo(rg__ofi_t *ofi, const char *provider,
                                   const rg__ofi_config_t *cfg, rg_err_t *err)
{
    rg_status_t status;

    struct fi_info *hints, *loose = NULL;
    char            found[320], domain[RG_CONFIG_STRING_MAX + 32];
    const char     *why;
    int             rc, known;

    hints = rg__ofi_hints(provider, cfg->domain, 1);
    if (hints == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "cannot allocate fi_getinfo hints");
    }
    rc = fi_getinfo(RG__OFI_API_VERSION, NULL, NULL, 0, hints, &ofi->info);
    fi_freeinfo(hints);
    if (rc == 0) {
        status = rg__ofi_source(ofi, provider, cfg, err);
        if (status == RG_OK) {
            status = rg__ofi_pick_domain(ofi, cfg, err);
        }
        if (status == RG_OK && cfg->rma) {
            rg__ofi_try_rma(ofi);
        }
        return status;
    }
    ofi->info = NULL;
    /* Say which requirement failed: asked again with only RDM and tagged
     * messages, a provider that answers lacks one of the others. */
    why   = "offers no FI_EP_RDM endpoint with FI_TAGGED messages";
    hints = rg__ofi_hints(provider, cfg->domain, 0);
    if (hints != NULL && fi_getinfo(RG__OFI_API_VERSION, NULL, NULL, 0, hints, &loose) == 0) {
        why = "offers FI_EP_RDM with FI_TAGGED but not in-order sends (FI_ORDER_SAS), "
              "FI_DIRECTED_RECV or 4 bytes of remote CQ data";
    }
    fi_freeinfo(loose);
    fi_freeinfo(hints);
    rg__ofi_list_providers(provider, found, sizeof(found), &known);
    if (!known) {
        return rg_err_set(err, RG_ERR_NOT_FOUND,
                          "transport '%s': libfabric has no provider '%s' here (fi_getinfo: "
                          "%s); %s", ofi->name, provider, fi_strerror(-rc), found);
    }
    domain[0] = '\0';
    if (cfg->domain[0] != '\0') {
        snprintf(domain, sizeof(domain), " in domain '%.200s' (RG_OFI_DOMAIN)", cfg->domain);
    }
    return rg_err_set(err, RG_ERR_NOT_FOUND,
                      "transport '%s': libfabric provider '%s'%s %s (fi_getinfo: %s); %s",
                      ofi->name, provider != NULL ? provider : "(any)", domain, why,
                      fi_strerror(-rc), found);
}

#define RG__OFI_CHECK(call, what)                                                   \
    do {                                                                            \
        int rc_ = (call);                                                           \
        if (rc_ != 0) {                                                             \
            return rg_err_set(err, RG_ERR_IO, "%s (%s, provider %s) failed: %s",    \
                              what, ofi->name, rg__ofi_prov(ofi), fi_strerror(-rc_)); \
        }                                                                           \
    } while (0)

/* Opens fabric, domain, CQ, AV and endpoint. */
static rg_status_t rg__ofi_endpoint(rg__ofi_t *ofi, const rg__ofi_config_t *cfg,
                                    rg_err_t *err)
{
    struct fi_info   *info = ofi->info;
    struct fi_cq_attr cq_attr;
    struct fi_av_attr av_attr;
    int               rc = -FI_ENOSYS;

    RG__OFI_CHECK(fi_fabric(info->fabric_attr, &ofi->fabric, NULL), "fi_fabric");
    RG__OFI_CHECK(fi_domain(ofi->fabric, info, &ofi->domain, NULL), "fi_domain");

    memset(&cq_attr, 0, sizeof(cq_attr));
    cq_attr.format = FI_CQ_FORMAT_TAGGED;
    cq_attr.size   = info->tx_attr->size + info->rx_attr->size;
    if (cfg->wait) {
        cq_attr.wait_obj = FI_WAIT_UNSPEC;
        rc               = fi_cq_open(ofi->domain, &cq_attr, &ofi->cq, NULL);
        ofi->cq_wait     = rc == 0;
    }
    if (rc != 0) {
        /* No wait object (asked for none, or the provider has none). */
        ofi->cq          = NULL;
        cq_attr.wait_obj = FI_WAIT_NONE;
        RG__OFI_CHECK(fi_cq_open(ofi->domain, &cq_attr, &ofi->cq, NULL), "fi_cq_open");
    }

    memset(&av_attr, 0, sizeof(av_attr));
    av_attr.type  = info->domain_attr->av_type == FI_AV_MAP ? FI_AV_MAP : FI_AV_TABLE;
    av_attr.count = (size_t)ofi->super.size;
    RG__OFI_CHECK(fi_av_open(ofi->domain, &av_attr, &ofi->av, NULL), "fi_av_open");

    RG__OFI_CHECK(fi_endpoint(ofi->domain, info, &ofi->ep, NULL), "fi_endpoint");
    RG__OFI_CHECK(fi_ep_bind(ofi->ep, &ofi->cq->fid, FI_TRANSMIT | FI_RECV),
                  "binding the CQ to the endpoint (fi_ep_bind)");
    RG__OFI_CHECK(fi_ep_bind(ofi->ep, &ofi->av->fid, 0),
                  "binding the AV to the endpoint (fi_ep_bind)");
    RG__OFI_CHECK(fi_enable(ofi->ep), "fi_enable");
    return RG_OK;
}

/* The tag width: mem_tag_format starts with the bits the provider ignores. */
static unsigned rg__ofi_tag_bits(const struct fi_info *info)
{
    uint64_t format = info->ep_attr->mem_tag_format;
    unsigned bits   = 64;

    if (format == 0) {
        return bits;
    }
    while (!(format & (UINT64_C(1) << 63))) {
        format <<= 1;
        bits--;
    }
    return bits;
}

/* The record every rank contributes to the first allgather. */
typedef struct rg__ofi_record {
    int32_t  status;
    uint32_t name_len;
    uint64_t frag;
    int32_t  pid;
    uint32_t tag_bits;
    uint64_t host;
    uint64_t head;
    uint32_t flags;    /* RG__OFI_REC_* */
} rg__ofi_record_t;

/* Its layout in RG__OFI_RECORD_LEN bytes. */
static const rg_wire_field_t rg__ofi_record_wire[] = {
    RG_WIRE_INT(rg__ofi_record_t, status, 0),    RG_WIRE_INT(rg__ofi_record_t, name_len, 4),
    RG_WIRE_INT(rg__ofi_record_t, frag, 8),      RG_WIRE_INT(rg__ofi_record_t, pid, 16),
    RG_WIRE_INT(rg__ofi_record_t, tag_bits, 20), RG_WIRE_INT(rg__ofi_record_t, host, 24),
    RG_WIRE_INT(rg__ofi_record_t, head, 32),     RG_WIRE_INT(rg__ofi_record_t, flags, 40),
};
#define RG__OFI_RECORD_NFIELDS (sizeof(rg__ofi_record_wire) / sizeof(rg__ofi_record_wire[0]))

static void rg__ofi_record_put(unsigned char *b, const rg__ofi_record_t *r)
{
    memset(b, 0, RG__OFI_RECORD_LEN);
    rg_wire_pack(b, r, rg__ofi_record_wire, RG__OFI_RECORD_NFIELDS);
}

static void rg__ofi_record_get(const unsigned char *b, rg__ofi_record_t *r)
{
    rg_wire_unpack(b, r, rg__ofi_record_wire, RG__OFI_RECORD_NFIELDS);
}

/* The head and fragment sizes this rank proposes: the configured ones,
 * within the provider's limit. */
static rg_status_t rg__ofi_sizes(rg__ofi_t *ofi, const rg__ofi_config_t *cfg,
                                 size_t *head_p, size_t *frag_p, rg_err_t *err)
{
    size_t frag = ofi->info->ep_attr->max_msg_size;

    if (cfg->frag_size != 0 && cfg->frag_size < RG__OFI_MIN_FRAG) {
        return rg_err_set(err, RG_ERR_RANGE,
                          "RG_OFI_FRAG_SIZE=%zu is below the minimum of %zu bytes "
                          "(0 takes the provider's max_msg_size)", cfg->frag_size,
                          RG__OFI_MIN_FRAG);
    }
    if (cfg->head_size < RG__OFI_MIN_HEAD) {
        return rg_err_set(err, RG_ERR_RANGE,
                          "RG_OFI_HEAD_SIZE=%zu is below the minimum of %zu bytes",
                          cfg->head_size, RG__OFI_MIN_HEAD);
    }
    if (frag == 0) {
        frag = SIZE_MAX;
    }
    if (cfg->frag_size != 0 && cfg->frag_size < frag) {
        frag = cfg->frag_size;
    }
    if (cfg->head_size > frag) {
        return rg_err_set(err, RG_ERR_RANGE,
                          "RG_OFI_HEAD_SIZE=%zu is above the fragment size of %zu bytes "
                          "(RG_OFI_FRAG_SIZE or the provider's max_msg_size)",
                          cfg->head_size, frag);
    }
    *head_p = cfg->head_size;
    *frag_p = frag;
    return RG_OK;
}

/* "198.18.0.1:40123" or whatever text the provider gives peer's address. */
static void rg__ofi_peer_where(rg__ofi_t *ofi, int peer, char *buf, size_t cap)
{
    unsigned char addr[256];
    size_t        alen = sizeof(addr), tlen = cap;

    snprintf(buf, cap, "address unknown");
    if (fi_av_lookup(ofi->av, ofi->peers[peer].addr, addr, &alen) == 0 &&
        alen <= sizeof(addr)) {
        (void)fi_av_straddr(ofi->av, addr, buf, &tlen);
    }
}

/* The error of a greeting that did not complete in time: it names the peer,
 * its address and the settings that matter. */
static rg_status_t rg__ofi_greet_timeout(rg__ofi_t *ofi, int peer, int send,
                                         uint64_t timeout_ns, rg_err_t *err)
{
    char where[256];

    rg__ofi_peer_where(ofi, peer, where, sizeof(where));
    return rg_err_set(err, RG_ERR_TIMEOUT,
                      "%s: rank %d could not reach rank %d (%s) within %.1f s (its greeting "
                      "of open was not %s): an unreachable address, or a path that drops "
                      "packets (RG_OFI_CONNECT_TIMEOUT bounds the wait; RG_OFI_IFACE or "
                      "RG_OFI_SUBNET choose the addresses ranks announce)", ofi->name,
                      ofi->super.rank, peer, where, (double)timeout_ns / 1e9,
                      send ? "sent" : "received");
}

/* Posts one greeting, retrying while the provider pushes back. */
static rg_status_t rg__ofi_greet_post(rg__ofi_t *ofi, int peer, int send, uint64_t deadline,
                                      uint64_t timeout_ns, rg_err_t *err)
{
    rg__ofi_op_t *op;
    ssize_t       rc;
    rg_status_t   status;

    op = rg__ofi_op_get(ofi);
    if (op == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "cannot allocate an ofi operation");
    }
    op->greet = 1;
    op->index = (uint64_t)peer;
    op->len   = (size_t)send;
    for (;;) {
        if (send) {
            rc = fi_tsend(ofi->ep, NULL, 0, NULL, ofi->peers[peer].addr, RG__OFI_TAG_GREET,
                          &op->ctx);
        } else {
            rc = fi_trecv(ofi->ep, NULL, 0, NULL, ofi->peers[peer].addr, RG__OFI_TAG_GREET,
                          0, &op->ctx);
        }
        if (rc == 0) {
            ofi->greet_left++;
            return RG_OK;
        }
        if (rc != -FI_EAGAIN) {
            rg__ofi_op_put(ofi, op);
            return rg_err_set(err, RG_ERR_IO, "%s: greeting rank %d (%s) failed: %s",
                              ofi->name, peer, send ? "fi_tsend" : "fi_trecv",
                              fi_strerror((int)-rc));
        }
        status = rg__ofi_cq_poll(ofi);
        if (status != RG_OK) {
            rg__ofi_op_put(ofi, op);
            if (err != NULL) {
                *err = ofi->super.err;
            }
            return status;
        }
        if (rg_time_mono_ns() > deadline) {
            rg__ofi_op_put(ofi, op);
            return rg__ofi_greet_timeout(ofi, peer, send, timeout_ns, err);
        }
    }
}

/* Every rank sends an empty greeting to every other and waits for theirs,
 * so that connections (rxm) and shared-memory mappings (shm) are made during
 * open, where a failure names the peer, not during the first measurement. */
static rg_status_t rg__ofi_greet(rg__ofi_t *ofi, uint64_t timeout_ns, rg_err_t *err)
{
    uint64_t         deadline = rg_time_mono_ns() + timeout_ns;
    rg__ofi_chunk_t *chunk;
    rg_status_t      status;
    int              i, size = ofi->super.size, rank = ofi->super.rank;

    /* Rank r greets r+1, r+2, ... and expects r-1, r-2, ... in that order,
     * which spreads the first contacts over the peers. */
    for (i = 1; i < size; i++) {
        status = rg__ofi_greet_post(ofi, (rank - i + size) % size, 0, deadline, timeout_ns,
                                    err);
        if (status == RG_OK) {
            status = rg__ofi_greet_post(ofi, (rank + i) % size, 1, deadline, timeout_ns, err);
        }
        if (status != RG_OK) {
            return status;
        }
    }
    while (ofi->greet_left > 0) {
        status = rg__ofi_cq_poll(ofi);
        if (status != RG_OK) {
            if (err != NULL) {
                *err = ofi->super.err;
            }
            return status;
        }
        if (rg_time_mono_ns() > deadline) {
            /* Greetings still posted name a peer that was not reached. */
            for (chunk = ofi->chunks; chunk != NULL; chunk = chunk->next) {
                for (i = 0; i < RG__OFI_OP_CHUNK; i++) {
                    if (chunk->ops[i].greet) {
                        return rg__ofi_greet_timeout(ofi, (int)chunk->ops[i].index,
                                                     (int)chunk->ops[i].len, timeout_ns, err);
                    }
                }
            }
            return rg_err_set(err, RG_ERR_TIMEOUT,
                              "%s: rank %d waited %.1f s for the greetings of open (%d "
                              "pending; RG_OFI_CONNECT_TIMEOUT)", ofi->name, rank,
                              (double)timeout_ns / 1e9, ofi->greet_left);
        }
    }
    return RG_OK;
}

void rg__ofi_close(rg_xport_t *xp)
{
    rg__ofi_t       *ofi = rg__ofi(xp);
    rg__ofi_chunk_t *chunk;
    void            *b;
    int              i;

    /* Reverse order of opening: the endpoint goes before what it is bound to. */
    if (ofi->ep != NULL) {
        fi_close(&ofi->ep->fid);
    }
    if (ofi->av != NULL) {
        fi_close(&ofi->av->fid);
    }
    if (ofi->cq != NULL) {
        fi_close(&ofi->cq->fid);
    }
    if (ofi->domain != NULL) {
        fi_close(&ofi->domain->fid);
    }
    if (ofi->fabric != NULL) {
        fi_close(&ofi->fabric->fid);
    }
    if (ofi->info != NULL) {
        fi_freeinfo(ofi->info);
    }
    /* Operations still posted (a failed transport) hold buffers too. */
    while ((chunk = ofi->chunks) != NULL) {
        ofi->chunks = chunk->next;
        for (i = 0; i < RG__OFI_OP_CHUNK; i++) {
            free(chunk->ops[i].bounce);
            free(chunk->ops[i].scratch);
        }
        free(chunk);
    }
    while ((b = ofi->bounces) != NULL) {
        memcpy(&ofi->bounces, b, sizeof(void *));
        free(b);
    }
    free(ofi->inject_buf);
    free(ofi->peers);
    free(ofi->source);
    free(ofi->name);
    free(ofi);
}

/* This rank's part of open up to its endpoint's name (in *name_p, of
 * *len_p bytes). */
static rg_status_t rg__ofi_setup(rg__ofi_t *ofi, const rg__ofi_config_t *cfg,
                                 rg__ofi_record_t *rec, void **name_p, rg_err_t *err)
{
    char        pbuf[RG_CONFIG_STRING_MAX];
    const char *provider = rg__ofi_provider_of(ofi->name, pbuf, sizeof(pbuf));
    size_t      head = 0, frag = 0, len = 0;
    void       *name;
    rg_status_t status;
    int         rc;

    status = rg__ofi_getinfo(ofi, provider, cfg, err);
    if (status == RG_OK) {
        status = rg__ofi_sizes(ofi, cfg, &head, &frag, err);
    }
    if (status == RG_OK) {
        status = rg__ofi_endpoint(ofi, cfg, err);
    }
    if (status != RG_OK) {
        return status;
    }
    /* Asked with no room, fi_getname says how long the name is. */
    rc = fi_getname(&ofi->ep->fid, NULL, &len);
    if (rc != 0 && rc != -FI_ETOOSMALL) {
        return rg_err_set(err, RG_ERR_IO, "fi_getname (%s) failed: %s", ofi->name,
                          fi_strerror(-rc));
    }
    name = calloc(1, len > 0 ? len : 1);
    if (name == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "cannot allocate an address");
    }
    rc = fi_getname(&ofi->ep->fid, name, &len);
    if (rc != 0) {
        free(name);
        return rg_err_set(err, RG_ERR_IO, "fi_getname (%s) failed: %s", ofi->name,
                          fi_strerror(-rc));
    }
    rec->name_len = (uint32_t)len;
    rec->frag     = frag;
    rec->head     = head;
    rec->tag_bits = rg__ofi_tag_bits(ofi->info);
    rec->flags    = (ofi->info->caps & FI_RMA) == FI_RMA ? RG__OFI_REC_RMA : 0;
    *name_p       = name;
    return RG_OK;
}

/* The reasons for the optional operations this handle lacks (xport.h):
 * injects turned off or unsafe here, or no FI_RMA on some rank. */
static void rg__ofi_why_not(rg__ofi_t *ofi, const rg__ofi_config_t *cfg, int no_rma_rank)
{
    const char *prov = rg__ofi_prov(ofi);

    if (!ofi->inject || ofi->super.attr.inject_size == 0) {
        if (cfg->inject == 0) {
            snprintf(ofi->why_inject, sizeof(ofi->why_inject),
                     "injects are off (RG_OFI_INJECT=0)");
        } else if (ofi->inject) {
            snprintf(ofi->why_inject, sizeof(ofi->why_inject),
                     "provider %s has no inject (inject_size 0)", prov);
        } else {
            snprintf(ofi->why_inject, sizeof(ofi->why_inject),
                     "provider %s may keep an injected message in this process until a "
                     "later call into libfabric, so injects are off (RG_OFI_SEND_SAFE=1; "
                     "RG_OFI_SEND_SAFE=0 allows them for callers that keep progressing)",
                     prov);
        }
        ofi->super.attr.why_not[RG_XPORT_OPT_INJECT] = ofi->why_inject;
    }
    if (!ofi->rma) {
        if (cfg->rma == 0) {
            snprintf(ofi->why_win, sizeof(ofi->why_win),
                     "one-sided writes were not asked for (RG_OFI_RMA=0)");
        } else if (no_rma_rank == ofi->super.rank) {
            snprintf(ofi->why_win, sizeof(ofi->why_win),
                     "provider %s offers no one-sided writes (FI_RMA) with tagged messages "
                     "on this endpoint", prov);
        } else {
            snprintf(ofi->why_win, sizeof(ofi->why_win),
                     "rank %d's endpoint (provider %s) has no one-sided writes (FI_RMA)",
                     no_rma_rank, prov);
        }
        ofi->super.attr.why_not[RG_XPORT_OPT_WIN] = ofi->why_win;
    }
}

/* Inserts every rank's name into the AV, one at a time and each from a
 * buffer at least as long as the provider's own address length (some read
 * that many bytes whatever the name's length), so that fi_addr r is rank r. */
static rg_status_t rg__ofi_av_fill(rg__ofi_t *ofi, const unsigned char *names,
                                   size_t name_max, const rg__ofi_record_t *recs,
                                   rg_err_t *err)
{
    size_t         pad_len = name_max > ofi->info->src_addrlen ? name_max
                                                               : ofi->info->src_addrlen;
    unsigned char *pad     = calloc(1, pad_len > 0 ? pad_len : 1);
    int            i, rc;

    if (pad == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "cannot allocate an ofi address");
    }
    for (i = 0; i < ofi->super.size; i++) {
        memset(pad, 0, pad_len);
        memcpy(pad, names + (size_t)i * name_max, recs[i].name_len);
        rc = fi_av_insert(ofi->av, pad, 1, &ofi->peers[i].addr, 0, NULL);
        if (rc != 1) {
            free(pad);
            return rg_err_set(err, RG_ERR_IO,
                              "inserting rank %d's address into the AV (%s, provider %s) "
                              "failed: %s", i, ofi->name, rg__ofi_prov(ofi),
                              fi_strerror(rc < 0 ? -rc : FI_EINVAL));
        }
    }
    free(pad);
    return RG_OK;
}

/* The settings of this instance: the config table, then what the name
 * says ("ofi:<provider>" and where), each checked. */
static rg_status_t rg__ofi_settings(const char *name, rg__ofi_config_t *cfg, rg_err_t *err)
{
    rg_status_t status;

    status = rg_config_load(&rg_xport_ofi_config_table, cfg, err);
    if (status != RG_OK) {
        return status;
    }
    if (!(cfg->connect_timeout_ns >= 1e6 && cfg->connect_timeout_ns <= 3600e9)) {
        return rg_err_set(err, RG_ERR_RANGE,
                          "RG_OFI_CONNECT_TIMEOUT=%gns is outside 1ms .. 1h",
                          cfg->connect_timeout_ns);
    }
    status = rg__ofi_variant_where(name, cfg, err);
    if (status != RG_OK) {
        return status;
    }
    if (strcmp(name, "ofi:") == 0) {
        return rg_err_set(err, RG_ERR_NOT_FOUND,
                          "transport 'ofi:' names no provider (ofi:tcp, ofi:shm, ofi:udp, "
                          "ofi:verbs, ofi:efa, ofi:cxi or any libfabric provider name)");
    }
    return RG_OK;
}

/* Reads every rank's record of the first allgather (blobs, into recs):
 * fails naming a rank whose setup failed, else takes each peer's pid and
 * host and agrees on the smallest head, fragment and tag width. Raises
 * *name_max_p to the longest name; *no_rma_rank_p is the first rank
 * without FI_RMA, or -1. */
static rg_status_t rg__ofi_agree(rg__ofi_t *ofi, const unsigned char *blobs,
                                 rg__ofi_record_t *recs, uint64_t host, size_t *name_max_p,
                                 int *no_rma_rank_p, rg_err_t *err)
{
    size_t   name_max    = *name_max_p;
    unsigned tag_bits    = 64;
    int      no_rma_rank = -1, i;

    ofi->frag = SIZE_MAX;
    ofi->head = SIZE_MAX;
    for (i = 0; i < ofi->super.size; i++) {
        rg__ofi_record_get(blobs + (size_t)i * RG__OFI_RECORD_LEN, &recs[i]);
        if (recs[i].status != RG_OK) {
            return rg_err_set(err, RG_ERR_BOOTSTRAP,
                              "rank %d could not open its %s endpoint (%s)", i, ofi->name,
                              rg_status_name((rg_status_t)recs[i].status));
        }
        ofi->peers[i].pid   = recs[i].pid;
        ofi->peers[i].local = recs[i].host == host;
        name_max = recs[i].name_len > name_max ? recs[i].name_len : name_max;
        ofi->frag = recs[i].frag < ofi->frag ? (size_t)recs[i].frag : ofi->frag;
        ofi->head = recs[i].head < ofi->head ? (size_t)recs[i].head : ofi->head;
        tag_bits  = recs[i].tag_bits < tag_bits ? recs[i].tag_bits : tag_bits;
        if (!(recs[i].flags & RG__OFI_REC_RMA) && no_rma_rank < 0) {
            no_rma_rank = i;
        }
    }
    /* Continuation tags hold the train number above one flag bit. */
    ofi->tag_bits   = tag_bits;
    ofi->train_mask = tag_bits >= 33 ? UINT64_C(0xffffffff)
                                     : (UINT64_C(1) << (tag_bits > 1 ? tag_bits - 1 : 1)) - 1;
    *name_max_p    = name_max;
    *no_rma_rank_p = no_rma_rank;
    return RG_OK;
}

/* The second allgather: every rank's endpoint name (this rank's is ep_name,
 * of name_len bytes), padded to the longest, into the AV; then, once every
 * rank's AV holds every rank, the greetings that make the connections. */
static rg_status_t rg__ofi_connect(rg__ofi_t *ofi, const void *ep_name, size_t name_len,
                                   const rg__ofi_record_t *recs, size_t name_max,
                                   uint64_t timeout_ns, rg_err_t *err)
{
    unsigned char *names, *mine;
    rg_status_t    status;

    names = calloc((size_t)ofi->super.size, name_max);
    mine  = calloc(1, name_max);
    if (names == NULL || mine == NULL) {
        free(mine);
        free(names);
        return rg_err_set(err, RG_ERR_NOMEM, "cannot allocate %d ofi addresses",
                          ofi->super.size);
    }
    memcpy(mine, ep_name, name_len);
    status = rg_boot_allgather(ofi->super.boot, mine, name_max, names, err);
    if (status == RG_OK) {
        status = rg__ofi_av_fill(ofi, names, name_max, recs, err);
    }
    /* No rank may send before every rank's AV knows it (connectionless
     * providers drop or refuse messages from unknown sources). */
    if (status == RG_OK) {
        status = rg_boot_barrier(ofi->super.boot, err);
    }
    if (status == RG_OK) {
        status = rg__ofi_greet(ofi, timeout_ns, err);
    }
    free(mine);
    free(names);
    return status;
}

/* What the agreed endpoints offer: injects, one-sided writes, the sizes in
 * attr and the reasons for what is missing; and the inject staging buffer. */
static rg_status_t rg__ofi_offer(rg__ofi_t *ofi, const rg__ofi_config_t *cfg, int no_rma_rank,
                                 rg_err_t *err)
{
    /* An inject completes before the peer has the data, and xport.h lets a
     * caller stop calling once its send is complete. Where reliability is a
     * software protocol over datagrams (rxd), only this rank's later calls
     * into libfabric would retransmit it; the tcp provider queues it in this
     * process while the socket is busy and writes it only when called again
     * (a peer then waits for it forever, seen in the conformance suite): no
     * injects there. */
    ofi->send_safe               = cfg->send_safe != 0;
    ofi->inject                  = cfg->inject != 0 &&
                                   !(cfg->send_safe &&
                                     (ofi->info->ep_attr->protocol == FI_PROTO_RXD ||
                                      rg__ofi_is_tcp(rg__ofi_prov(ofi))));
    ofi->inject_size             = ofi->inject ? ofi->info->tx_attr->inject_size : 0;
    ofi->rma                     = no_rma_rank < 0;
    ofi->super.attr.same_host    = (ofi->info->caps & FI_LOCAL_COMM) != 0 &&
                                   (ofi->info->caps & FI_REMOTE_COMM) == 0;
    ofi->super.attr.max_msg_size = SIZE_MAX;
    ofi->super.attr.inject_size  = ofi->inject_size < ofi->head ? ofi->inject_size
                                                                : ofi->head - 1;
    ofi->live_check_ns           = rg_time_mono_ns();
    rg__ofi_why_not(ofi, cfg, no_rma_rank);
    if (ofi->super.attr.inject_size > 0 &&
        (ofi->inject_buf = malloc(ofi->super.attr.inject_size)) == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "cannot allocate an inject buffer");
    }
    return RG_OK;
}

/* Open, in steps: the settings; the handle; this rank's endpoint; the
 * exchange of the records, and the agreement on sizes; the exchange of the
 * names, the AV and the greetings; then what the endpoints offer. */
rg_status_t rg__ofi_open(const char *name, rg_boot_t *boot, rg_xport_t **xp_p,
                         rg_err_t *err)
{
    rg__ofi_config_t cfg;
    rg__ofi_record_t rec, *recs = NULL;
    rg__ofi_t       *ofi;
    unsigned char    own[RG__OFI_RECORD_LEN];
    unsigned char   *blobs = NULL;
    void            *ep_name = NULL;
    size_t           name_max = 1;
    rg_status_t      status, setup;
    rg_err_t         setup_err;
    uint64_t         host = rg_host_id();
    int              size = rg_boot_size(boot), rank = rg_boot_rank(boot);
    int              no_rma_rank = -1;
    char             pbuf[RG_CONFIG_STRING_MAX];

    status = rg__ofi_settings(name, &cfg, err);
    if (status != RG_OK) {
        return status;
    }
    ofi = calloc(1, sizeof(*ofi));
    if (ofi == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "cannot allocate the ofi transport");
    }
    ofi->name  = strdup(name);
    ofi->peers = calloc((size_t)size, sizeof(*ofi->peers));
    recs       = calloc((size_t)size, sizeof(*recs));
    blobs      = calloc((size_t)size, RG__OFI_RECORD_LEN);
    if (ofi->name == NULL || ofi->peers == NULL || recs == NULL || blobs == NULL) {
        status = rg_err_set(err, RG_ERR_NOMEM, "cannot allocate %d ofi peers", size);
        goto err_close;
    }
    ofi->super.ops       = &rg_xport_ofi_ops;
    ofi->super.attr.name = ofi->name;
    ofi->super.boot      = boot;
    ofi->super.rank      = rank;
    ofi->super.size      = size;

    /* libfabric reads its settings when it initializes, at the first
     * fi_getinfo of the process: before it, tcp's staging send buffer is
     * turned off (see SEND_SAFE), unless the user chose a size. */
    if (cfg.send_safe && rg__ofi_is_tcp(rg__ofi_provider_of(name, pbuf, sizeof(pbuf))) &&
        getenv("FI_TCP_STAGING_SBUF_SIZE") == NULL) {
        (void)setenv("FI_TCP_STAGING_SBUF_SIZE", "0", 0);
    }

    /* A rank whose setup fails still joins the exchange, with its status, so
     * that every rank fails the open instead of waiting for it. */
    memset(&rec, 0, sizeof(rec));
    rg_err_clear(&setup_err);
    setup        = rg__ofi_setup(ofi, &cfg, &rec, &ep_name, &setup_err);
    rec.status   = setup;
    rec.pid      = (int32_t)getpid();
    rec.host     = host;
    rg__ofi_record_put(own, &rec);
    status = rg_xport_join_setup(boot, setup, &setup_err, own, sizeof(own), blobs, err);
    if (status != RG_OK) {
        goto err_close;
    }
    status = rg__ofi_agree(ofi, blobs, recs, host, &name_max, &no_rma_rank, err);
    if (status == RG_OK) {
        status = rg__ofi_connect(ofi, ep_name, rec.name_len, recs, name_max,
                                 (uint64_t)cfg.connect_timeout_ns, err);
    }
    if (status == RG_OK) {
        status = rg__ofi_offer(ofi, &cfg, no_rma_rank, err);
    }
    if (status != RG_OK) {
        goto err_close;
    }
    free(ep_name);
    free(blobs);
    free(recs);
    *xp_p = &ofi->super;
    return RG_OK;

err_close:
    free(ep_name);
    free(blobs);
    free(recs);
    rg__ofi_close(&ofi->super);
    return status;
}
