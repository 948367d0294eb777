/*
 * railgauge: the rails transport's wire format, in one place (the design of
 * what travels when is in rails.h).
 *
 * Every rails message on a (rail, peer) subchannel is a message of the
 * rail's transport that starts with this 48-byte header, little-endian:
 *
 *   offset  size  field
 *        0     4  magic, RG__RAILS_MAGIC ("RGRL")
 *        4     4  type, an RG__RAILS_T_* (a STRIPE may add RG__RAILS_T_ACKWANT)
 *        8     8  v[0]  seq:   the message's per-pair sequence number
 *       16     8  v[1]  total: the message's length in bytes
 *       24     8  v[2]  off:   the piece's offset in the message
 *       32     8  v[3]  len:   the piece's length
 *       40     8  v[4]  ack:   the sender's cumulative acknowledgement: every
 *                              message of the receiver to it below this
 *                              sequence number is complete there
 *
 * What follows the header, and what v[0..3] mean, by type:
 *
 *   INLINE  v = seq, total, 0, total; the message's bytes follow in the same
 *           rail message (total <= RG_RAILS_INLINE <= RG__RAILS_INLINE_MAX).
 *   STRIPE  v = seq, total, off, len; the piece's len bytes follow as the
 *           next rail message. With ACKWANT the sender's send completes only
 *           with the acknowledgement (it sends from the user's buffer).
 *   RATE    v = 0, 0, 0, rails; one double per rail follows (bytes/ns, the
 *           receiver's measured rates, in the byte order of the host: the
 *           ranks of a job share one).
 *   BYE     v = 0; the sender closes: nothing more comes on this subchannel.
 *   ACK     v = 0; only the acknowledgement in v[4].
 *   DOWN    v = 0, epoch, 0, rail; the sender found instance epoch of rail
 *           down.
 *   JOIN    v = rail, epoch, step, len; len (<= RG__RAILS_BLOB_MAX) bytes of
 *           the sender follow, for step (< RG__RAILS_STEPS) of try epoch to
 *           take rail back (rejoin.c).
 */
#ifndef RG_RAILS_WIRE_H
#define RG_RAILS_WIRE_H

#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define RG__RAILS_MAGIC      0x4c524752u  /* "RGRL" */
#define RG__RAILS_HDR        48u
#define RG__RAILS_INLINE_MAX ((size_t)1 << 20)
#define RG__RAILS_BLOB_MAX   512u  /* a rejoin's exchange: bytes per rank and step */
#define RG__RAILS_STEPS      4u    /* ... steps: the transport's, then the outcome */

enum {
    RG__RAILS_T_INLINE = 1, RG__RAILS_T_STRIPE = 2, RG__RAILS_T_RATE = 3, RG__RAILS_T_BYE = 4,
    RG__RAILS_T_ACK = 5, RG__RAILS_T_DOWN = 6, RG__RAILS_T_JOIN = 7
};
/* In a STRIPE header's type: the sender's send waits for the acknowledgement. */
#define RG__RAILS_T_ACKWANT 0x100u

/* 1 for the control types (RATE, BYE, ACK, DOWN, JOIN), which carry no
 * bytes of a message. */
static inline int rg__rails_wire_control(uint32_t type)
{
    return type >= RG__RAILS_T_RATE && type <= RG__RAILS_T_JOIN;
}

static inline void rg__rails_wire_put(unsigned char *b, uint32_t type, uint64_t seq,
                                      uint64_t total, uint64_t off, uint64_t len, uint64_t ack)
{
    uint32_t m = htole32(RG__RAILS_MAGIC), t = htole32(type);
    uint64_t v[5] = {htole64(seq), htole64(total), htole64(off), htole64(len), htole64(ack)};

    memcpy(b, &m, 4);
    memcpy(b + 4, &t, 4);
    memcpy(b + 8, v, sizeof(v));
}

/* v = seq, total, off, len, ack. 1 if the magic is right. */
static inline int rg__rails_wire_get(const unsigned char *b, uint32_t *type, uint64_t v[5])
{
    uint32_t m, t;
    int      i;

    memcpy(&m, b, 4);
    memcpy(&t, b + 4, 4);
    memcpy(v, b + 8, 5 * sizeof(uint64_t));
    for (i = 0; i < 5; i++) {
        v[i] = le64toh(v[i]);
    }
    *type = le32toh(t);
    return le32toh(m) == RG__RAILS_MAGIC;
}

#endif /* RG_RAILS_WIRE_H */
