/*
 * railgauge: the "rails" transport: several instances of a transport side by
 * side, one per rail (a NIC, a port, a path), and a scheduler that decides
 * for each message which rails carry it (docs/transports.md, "rails").
 *
 * Rails are subchannels: rail r is its own transport instance
 * ("tcp:<where>" from RG_RAILS_LIST), so (rail, peer) is one connection. A
 * message goes on one rail, whole, or is cut into stripes, one per rail, by
 * the policy (RG_RAILS_POLICY):
 *
 *   binding      every message to a peer on one rail, (rank + peer) mod R:
 *                the pairs of a job spread over the rails;
 *   round-robin  whole messages, each on the next rail in turn;
 *   even         below RG_RAILS_STRIPE_MIN on one rail (the best-weighted),
 *                above it stripes of equal size on every rail;
 *   weighted     the same with stripes in proportion to RG_RAILS_WEIGHTS
 *                (the rails' bandwidths, measured by `railgauge gauge
 *                --rails`, or given);
 *   adaptive     weighted, with the weights of each peer updated from the
 *                rate each rail delivered its stripes at, measured by the
 *                receiver and fed back after every striped message,
 *                smoothed (RG_RAILS_ADAPT_ALPHA) and floored
 *                (RG_RAILS_ADAPT_FLOOR) so that a rail slowed down by other
 *                traffic is still probed and taken back when it recovers.
 *
 * Wire format, per rail and peer, as messages of the rail's transport: a
 * 48-byte header (magic, type, the message's per-pair sequence number, its
 * total length, the stripe's offset and length), followed in the same
 * message by the bytes of a message up to RG_RAILS_INLINE (type INLINE,
 * copied once into a staging buffer), or by one more message holding the
 * stripe's bytes (type STRIPE), sent from and received into the user's
 * buffers directly. A RATE header carries the receiver's measured rates.
 *
 * Receiving: every (rail, peer) has a header receive posted. A stripe's
 * header makes that subchannel wait for its payload, which is received
 * straight into the matched receive's buffer; while the message is not
 * matched yet the subchannel stalls (its bytes stay in the rail's own
 * buffers: back-pressure, no copy). Messages of one peer are matched to
 * receives in sequence order, whichever rail brought their first header, so
 * the per-pair order of the transport holds although rails overtake each
 * other. No deadlock: the lowest unmatched message of a peer always heads
 * the rails it is on, since each rail carries a peer's messages in order.
 *
 * Failover (RG_RAILS_FAILOVER, on by default). Every header carries the
 * sender's cumulative acknowledgement of the other direction: all messages
 * of the peer below that sequence number are complete here. It travels on
 * the traffic there is, and in an ACK message when a striped message
 * completes (its send completes only then: the sender keeps sending from
 * the user's buffer until the bytes are known to be in) and after every
 * RG__RAILS_ACK_EVERY inline messages (their bytes are kept in the staging
 * buffer until acknowledged). Stripes go in pieces of at most RG_RAILS_CHUNK,
 * so that a rail's failure costs at most the pieces in flight on it.
 *
 * A rail fails when its transport errs: a peer reset the connection, or the
 * path is down (tcp: RG_TCP_DEAD_AFTER, from what the peer's kernel has
 * acknowledged, so a peer that is merely busy is not taken for dead). The
 * rank closes that rail's transport instance (no request of it touches a
 * user buffer any more), tells every peer on every remaining rail (DOWN,
 * ahead of what follows on that rail, so the peer closes the rail before
 * the resent pieces arrive) and sends again, on the remaining rails, every
 * unacknowledged piece that the failed rail carried. The receiver counts
 * each piece of a message once (by its offset) and drops messages below its
 * acknowledgement, acknowledging them again, so that nothing is lost or
 * delivered twice. The event goes to stderr and into the transport's info
 * ("events"). With every rail failed the transport fails, naming them.
 *
 * Recovery (RG_RAILS_RETRY): rank 0 tries to take a failed rail back once its
 * end of the rail has a carrier. Every rank opens the rail's transport anew
 * on a thread, with a bootstrap whose allgathers are JOIN messages over the
 * rails still up (rg__rails_rejoin_step moves them), and the rail is back
 * where every rank's open succeeded. Its instances are numbered (epoch): a
 * DOWN names the one it is about.
 *
 * The layer. The rails transport is an rg_xport_t like the others, opened by
 * name ("rails") through rg_xport_open(), but it stacks on xport's
 * transports, so it lives above xport, which does not know it: a tool that
 * offers it calls rg_rails_register() at its start, which adds it to xport's
 * registry and its settings (RG_RAILS_*) to the config tables that
 * --print-config lists. Its files, one concern each (rails_int.h holds the
 * objects and the rg__rails_* names they share):
 *
 *   wire.h      the wire format: header layout, message types, limits;
 *   config.c    the settings (RG_RAILS_*) and their checks;
 *   policy.c    the policies: the rail of a whole message, the stripes of a
 *               message, the weights when a rail goes or comes back;
 *   send.c      sending: rail requests, the records of unacknowledged
 *               messages, headers, pieces;
 *   recv.c      receiving: header receives, reordering by sequence number,
 *               matching, stalls, duplicates;
 *   feedback.c  the receive rates (dispersion) and the RATE messages that
 *               feed the adaptive policy;
 *   failover.c  a rail's failure, its teardown and the resending of what it
 *               carried, the acknowledgements;
 *   rejoin.c    taking a failed rail back, with its own threaded allgather;
 *   progress.c  the progress engine and the sleep on every rail at once;
 *   open.c      open, close (goodbyes), info_json, the ops table.
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
