/*
 * railgauge: the "rails" transport, a layer above the transports: several
 * instances of one transport side by side, one per rail, and a scheduler that
 * places each message on them (docs/transports.md, "rails"; the design of its
 * wire format, failover and recovery is in rails.c).
 *
 * It is an rg_xport_t like the others, opened by name ("rails") through
 * rg_xport_open(), but it stacks on xport's transports, so xport does not
 * know it: a tool that offers it calls rg_rails_register() at its start,
 * which adds it to xport's registry and its settings (RG_RAILS_*) to the
 * config tables --print-config lists.
 */
#ifndef RG_RAILS_RAILS_H
#define RG_RAILS_RAILS_H

#include "base/config.h"
#include "base/status.h"
#include "xport/xport.h"

/* The transport's ops table and its settings (prefix RAILS). */
extern const rg_xport_ops_t    rg_rails_ops;
extern const rg_config_table_t rg_rails_config_table;

/* Registers the rails transport with xport (rg_xport_register): from then
 * on rg_xport_open("rails", ...) opens it and rg_xport_config_tables() lists
 * RAILS last. Call it once at a tool's start, before any transport is opened
 * and while one thread runs; again is harmless. RG_OK, or the status of
 * rg_xport_register (the registry is full). */
rg_status_t rg_rails_register(void);

#endif /* RG_RAILS_RAILS_H */
