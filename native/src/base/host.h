/*
 * railgauge: this host's identity.
 *
 * Ranks whose ids are equal share a host and a pid namespace, so each can
 * check the other's pid (for liveness, or to map its memory).
 */
#ifndef RG_BASE_HOST_H
#define RG_BASE_HOST_H

#include <stdint.h>

/* The host name, the boot id and the pid namespace, hashed (FNV-1a). */
uint64_t rg_host_id(void);

#endif /* RG_BASE_HOST_H */
