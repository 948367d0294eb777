/*
 * railgauge: records on the wire as tables. A record that ranks exchange
 * (an address in an allgather, a window's keys) is a C struct on each side
 * and little-endian bytes between them; a table of its fields says where
 * each one lies in both, and one packer and one unpacker read the table, so
 * that a transport writes its layout once instead of a memcpy/htole pair a
 * field twice over.
 *
 * Integer fields of 1, 2, 4 or 8 bytes (signed or unsigned: the bits are
 * kept) are written little-endian whatever the host; RG_WIRE_BYTES fields
 * (an IPv6 address) are copied as they are. Bytes of the record that no
 * field covers are left as they are by rg_wire_pack: zero them first where
 * they travel.
 */
#ifndef RG_BASE_WIRE_H
#define RG_BASE_WIRE_H

#include <stddef.h>
#include <stdint.h>

typedef struct rg_wire_field {
    size_t   at;    /* offset in the struct */
    uint32_t size;  /* bytes */
    uint32_t raw;   /* 1: bytes as they are; 0: a little-endian integer */
    size_t   wire;  /* offset in the record's bytes */
} rg_wire_field_t;

#define RG_WIRE_INT(type, member, wire_off) \
    {offsetof(type, member), (uint32_t)sizeof(((type *)0)->member), 0, (wire_off)}
#define RG_WIRE_BYTES(type, member, wire_off) \
    {offsetof(type, member), (uint32_t)sizeof(((type *)0)->member), 1, (wire_off)}

void rg_wire_pack(unsigned char *b, const void *rec, const rg_wire_field_t *f, size_t n);
void rg_wire_unpack(const unsigned char *b, void *rec, const rg_wire_field_t *f, size_t n);

/* One little-endian integer of size bytes (1, 2, 4 or 8) at b. */
void     rg_wire_put_uint(unsigned char *b, uint64_t v, size_t size);
uint64_t rg_wire_get_uint(const unsigned char *b, size_t size);

#endif
