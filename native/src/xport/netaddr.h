/*
 * railgauge: this host's own address, picked by interface name and/or by
 * subnet, for transports whose ranks run on several hosts (or network
 * namespaces) and must each announce an address their peers can reach,
 * with one setting for every rank: RG_TCP_IFACE=eth1 or
 * RG_TCP_SUBNET=10.1.0.0/16 names a different address on every host.
 *
 * Used by tcp_open.c (RG_TCP_IFACE, RG_TCP_SUBNET) and ofi_open.c (RG_OFI_IFACE,
 * RG_OFI_SUBNET).
 */
#ifndef RG_XPORT_NETADDR_H
#define RG_XPORT_NETADDR_H

#include <net/if.h>
#include <netinet/in.h>
#include <stdint.h>

#include "base/error.h"

typedef struct rg_netaddr {
    int           family;                   /* AF_INET or AF_INET6 */
    unsigned char ip[16];                   /* network byte order */
    char          text[INET6_ADDRSTRLEN];   /* numeric, without brackets */
    char          ifname[IF_NAMESIZE];      /* the interface it is on */
} rg_netaddr_t;

/*
 * Picks the first address of an interface that is up and matches every
 * filter given: iface (its name) and subnet (CIDR text, "198.18.0.0/24" or
 * "fd00::/64"); empty or NULL filters match anything, but at least one must
 * be given. IPv4 addresses come before IPv6 ones; link-local IPv6 addresses
 * are never picked (they need a scope). iface_var and subnet_var are the
 * settings' names for messages ("RG_TCP_IFACE").
 *
 * Errors: RG_ERR_PARSE for a malformed subnet; RG_ERR_NOT_FOUND when no
 * address matches, with a message that says why (no such interface, the
 * interface is down or has no address, nothing in the subnet) and lists the
 * addresses this host has; RG_ERR_SYSTEM when getifaddrs fails.
 */
rg_status_t rg_netaddr_pick(const char *iface, const char *subnet, const char *iface_var,
                            const char *subnet_var, rg_netaddr_t *out, rg_err_t *err);

/* Parses CIDR text into family, network bytes (host bits cleared) and
 * prefix length; RG_ERR_PARSE (naming var) when malformed. */
rg_status_t rg_netaddr_parse_cidr(const char *text, const char *var, int *family,
                                  unsigned char net[16], unsigned *prefix, rg_err_t *err);

/* 1 for 127.0.0.0/8 and ::1. */
int rg_netaddr_is_loopback(int family, const unsigned char ip[16]);

/* An identity of this host's network namespace: equal for two processes
 * exactly when they share one (boot id and the namespace's inode), so that
 * a loopback address announced by a peer is known to be reachable or not. */
uint64_t rg_netaddr_netns_id(void);

/* 1 when the rail `where` (an interface name, a numeric address or a CIDR
 * subnet, as in "tcp:<where>") is on an interface that is up and has its
 * carrier (IFF_UP and IFF_RUNNING); 0 otherwise (down, no such interface or
 * address, or getifaddrs failed). A 127/8 address counts as up. The rails
 * transport asks this before it tries to take a failed rail back. */
int rg_netaddr_carrier(const char *where);

#endif /* RG_XPORT_NETADDR_H */
