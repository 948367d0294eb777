/*
 * railgauge: this host's own address by interface name and/or subnet (see
 * netaddr.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "xport/netaddr.h"

/* How much of the host's address list an error message shows. */
#define RG__NETADDR_LIST_MAX 200

int rg_netaddr_is_loopback(int family, const unsigned char ip[16])
{
    static const unsigned char v6_loop[16] = {0, 0, 0, 0, 0, 0, 0, 0,
                                              0, 0, 0, 0, 0, 0, 0, 1};

    if (family == AF_INET) {
        return ip[0] == 127;
    }
    return family == AF_INET6 && memcmp(ip, v6_loop, 16) == 0;
}

uint64_t rg_netaddr_netns_id(void)
{
    char        boot[64] = "";
    struct stat st;
    uint64_t    h = 1469598103934665603ull;
    size_t      i;
    FILE       *f;

    f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f != NULL) {
        if (fgets(boot, (int)sizeof(boot), f) == NULL) {
            boot[0] = '\0';
        }
        fclose(f);
    }
    for (i = 0; boot[i] != '\0'; i++) {
        h = (h ^ (unsigned char)boot[i]) * 1099511628211ull;
    }
    if (stat("/proc/self/ns/net", &st) == 0) {
        for (i = 0; i < 8; i++) {
            h = (h ^ (((uint64_t)st.st_ino >> (8 * i)) & 0xffu)) * 1099511628211ull;
        }
    }
    return h;
}

rg_status_t rg_netaddr_parse_cidr(const char *text, const char *var, int *family,
                                  unsigned char net[16], unsigned *prefix, rg_err_t *err)
{
    char          host[INET6_ADDRSTRLEN + 1];
    const char   *slash = strchr(text, '/');
    char         *end;
    unsigned long bits;
    unsigned      max, i;
    size_t        n;

    if (slash == NULL || (n = (size_t)(slash - text)) == 0 || n >= sizeof(host)) {
        goto bad;
    }
    memcpy(host, text, n);
    host[n] = '\0';
    memset(net, 0, 16);
    if (inet_pton(AF_INET, host, net) == 1) {
        *family = AF_INET;
        max     = 32;
    } else if (inet_pton(AF_INET6, host, net) == 1) {
        *family = AF_INET6;
        max     = 128;
    } else {
        goto bad;
    }
    errno = 0;
    bits  = strtoul(slash + 1, &end, 10);
    if (slash[1] < '0' || slash[1] > '9' || *end != '\0' || errno != 0 || bits > max) {
        goto bad;
    }
    *prefix = (unsigned)bits;
    /* Host bits are cleared: 198.18.0.1/24 names 198.18.0.0/24. */
    for (i = 0; i < max / 8; i++) {
        if (i * 8 >= bits) {
            net[i] = 0;
        } else if (i * 8 + 8 > bits) {
            net[i] &= (unsigned char)(0xffu << (8 - (bits - i * 8)));
        }
    }
    return RG_OK;

bad:
    return rg_err_set(err, RG_ERR_PARSE,
                      "%s='%s' is not a subnet in CIDR notation (address/prefix length, "
                      "such as 198.18.0.0/24 or fd00::/64)", var, text);
}

static int rg__netaddr_in_subnet(int family, const unsigned char ip[16], int net_family,
                                 const unsigned char net[16], unsigned prefix)
{
    unsigned i;

    if (family != net_family) {
        return 0;
    }
    for (i = 0; i < prefix / 8; i++) {
        if (ip[i] != net[i]) {
            return 0;
        }
    }
    if (prefix % 8 != 0) {
        unsigned char mask = (unsigned char)(0xffu << (8 - prefix % 8));

        return (ip[prefix / 8] & mask) == net[prefix / 8];
    }
    return 1;
}

/* family and bytes of an interface address; 0 for other families. */
static int rg__netaddr_of(const struct ifaddrs *ifa, unsigned char ip[16])
{
    if (ifa->ifa_addr == NULL) {
        return 0;
    }
    memset(ip, 0, 16);
    if (ifa->ifa_addr->sa_family == AF_INET) {
        memcpy(ip, &((const struct sockaddr_in *)(const void *)ifa->ifa_addr)->sin_addr, 4);
        return AF_INET;
    }
    if (ifa->ifa_addr->sa_family == AF_INET6) {
        memcpy(ip, &((const struct sockaddr_in6 *)(const void *)ifa->ifa_addr)->sin6_addr, 16);
        /* fe80::/10 needs a scope id that peers cannot know. */
        if (ip[0] == 0xfe && (ip[1] & 0xc0) == 0x80) {
            return 0;
        }
        return AF_INET6;
    }
    return 0;
}

/* "lo 127.0.0.1, rail0 198.18.0.1 (down)" for messages. */
static void rg__netaddr_list(const struct ifaddrs *all, char *buf, size_t cap)
{
    const struct ifaddrs *ifa;
    unsigned char         ip[16];
    char                  text[INET6_ADDRSTRLEN];
    size_t                used = 0;
    int                   family, n = 0;

    buf[0] = '\0';
    for (ifa = all; ifa != NULL && used < cap; ifa = ifa->ifa_next) {
        family = rg__netaddr_of(ifa, ip);
        if (family == 0 || inet_ntop(family, ip, text, sizeof(text)) == NULL) {
            continue;
        }
        used += (size_t)snprintf(buf + used, cap - used, "%s%s %s%s", n++ > 0 ? ", " : "",
                                 ifa->ifa_name, text,
                                 (ifa->ifa_flags & IFF_UP) ? "" : " (down)");
    }
    if (n == 0) {
        snprintf(buf, cap, "none");
    }
}

rg_status_t rg_netaddr_pick(const char *iface, const char *subnet, const char *iface_var,
                            const char *subnet_var, rg_netaddr_t *out, rg_err_t *err)
{
    struct ifaddrs *all = NULL, *ifa;
    unsigned char   ip[16], net[16];
    unsigned        prefix = 0;
    char            list[RG__NETADDR_LIST_MAX + 64];
    int             want_if = iface != NULL && iface[0] != '\0';
    int             want_net = subnet != NULL && subnet[0] != '\0';
    int             net_family = 0, family, pass;
    int             if_seen = 0, if_up = 0, if_addrs = 0, down_match = 0;
    rg_status_t     status;

    memset(out, 0, sizeof(*out));
    if (!want_if && !want_net) {
        return rg_err_set(err, RG_ERR_INVALID, "%s and %s are both empty", iface_var,
                          subnet_var);
    }
    if (want_if && strlen(iface) >= IF_NAMESIZE) {
        return rg_err_set(err, RG_ERR_NOT_FOUND,
                          "%s='%s': no interface of that name here (names have at most "
                          "%d characters)", iface_var, iface, IF_NAMESIZE - 1);
    }
    if (want_net) {
        status = rg_netaddr_parse_cidr(subnet, subnet_var, &net_family, net, &prefix, err);
        if (status != RG_OK) {
            return status;
        }
    }
    if (getifaddrs(&all) != 0) {
        return rg_err_set_errno(err, RG_ERR_SYSTEM, errno, "getifaddrs failed");
    }
    /* Pass 0 looks for IPv4 addresses, pass 1 for IPv6. */
    for (pass = 0; pass < 2; pass++) {
        for (ifa = all; ifa != NULL; ifa = ifa->ifa_next) {
            if (want_if && strcmp(ifa->ifa_name, iface) != 0) {
                continue;
            }
            if (pass == 0 && want_if) {
                if_seen = 1;
                if_up |= (ifa->ifa_flags & IFF_UP) != 0;
            }
            family = rg__netaddr_of(ifa, ip);
            if (family != (pass == 0 ? AF_INET : AF_INET6)) {
                continue;
            }
            if_addrs++;
            if (want_net && !rg__netaddr_in_subnet(family, ip, net_family, net, prefix)) {
                continue;
            }
            if (!(ifa->ifa_flags & IFF_UP)) {
                down_match++;
                continue;
            }
            out->family = family;
            memcpy(out->ip, ip, 16);
            snprintf(out->ifname, sizeof(out->ifname), "%s", ifa->ifa_name);
            if (inet_ntop(family, ip, out->text, sizeof(out->text)) == NULL) {
                snprintf(out->text, sizeof(out->text), "?");
            }
            freeifaddrs(all);
            return RG_OK;
        }
    }
    rg__netaddr_list(all, list, RG__NETADDR_LIST_MAX);
    freeifaddrs(all);
    if (want_if && !if_seen) {
        status = rg_err_set(err, RG_ERR_NOT_FOUND,
                            "%s='%s': no interface of that name here (addresses here: %s)",
                            iface_var, iface, list);
    } else if (want_if && !if_up) {
        status = rg_err_set(err, RG_ERR_NOT_FOUND, "%s='%s': the interface is down",
                            iface_var, iface);
    } else if (want_if && if_addrs == 0) {
        status = rg_err_set(err, RG_ERR_NOT_FOUND,
                            "%s='%s': the interface has no IPv4 or IPv6 address (link-local "
                            "ones do not count)", iface_var, iface);
    } else if (want_if) {
        status = rg_err_set(err, RG_ERR_NOT_FOUND,
                            "%s='%s' has no address in %s='%s' (addresses here: %s)",
                            iface_var, iface, subnet_var, subnet, list);
    } else if (down_match > 0) {
        status = rg_err_set(err, RG_ERR_NOT_FOUND,
                            "%s='%s': the only addresses in it are on interfaces that are "
                            "down (addresses here: %s)", subnet_var, subnet, list);
    } else {
        status = rg_err_set(err, RG_ERR_NOT_FOUND,
                            "%s='%s': no interface here has an address in it (addresses "
                            "here: %s)", subnet_var, subnet, list);
    }
    return status;
}

int rg_netaddr_carrier(const char *where)
{
    struct ifaddrs *all = NULL, *ifa;
    unsigned char   ip[16], want[16], net[16];
    unsigned        prefix = 0;
    int             mode, family, want_family = 0, found = 0;

    if (where == NULL || where[0] == '\0') {
        return 0;
    }
    if (strchr(where, '/') != NULL) {
        mode = 2;
        if (rg_netaddr_parse_cidr(where, "rail", &want_family, net, &prefix, NULL) != RG_OK) {
            return 0;
        }
    } else if (inet_pton(AF_INET, where, want) == 1) {
        mode = 1;
        want_family = AF_INET;
    } else if (inet_pton(AF_INET6, where, want) == 1) {
        mode = 1;
        want_family = AF_INET6;
    } else {
        mode = 0;
    }
    if (getifaddrs(&all) != 0) {
        return 0;
    }
    for (ifa = all; ifa != NULL && !found; ifa = ifa->ifa_next) {
        if ((ifa->ifa_flags & (IFF_UP | IFF_RUNNING)) != (IFF_UP | IFF_RUNNING)) {
            continue;
        }
        if (mode == 0) {
            found = strcmp(ifa->ifa_name, where) == 0;
            continue;
        }
        family = rg__netaddr_of(ifa, ip);
        if (family == 0 || family != want_family) {
            continue;
        }
        found = mode == 1 ? memcmp(ip, want, family == AF_INET ? 4 : 16) == 0
                          : rg__netaddr_in_subnet(family, ip, want_family, net, prefix);
    }
    freeifaddrs(all);
    if (!found && mode == 1 && want_family == AF_INET && want[0] == 127) {
        found = 1;  /* 127.0.0.0/8 is all loopback, bound to as given */
    }
    return found;
}
