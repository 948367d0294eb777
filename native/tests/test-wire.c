/*
 * railgauge: tests of records on the wire as tables (base/wire.h).
 */
#include <stdint.h>
#include <string.h>

#include "base/wire.h"
#include "task.h"

typedef struct rec {
    int32_t  status;
    uint16_t family, port;
    uint8_t  ip[4];
    uint64_t host;
    uint8_t  one;
} rec_t;

static const rg_wire_field_t rec_wire[] = {
    RG_WIRE_INT(rec_t, status, 0), RG_WIRE_INT(rec_t, family, 4), RG_WIRE_INT(rec_t, port, 6),
    RG_WIRE_BYTES(rec_t, ip, 8),   RG_WIRE_INT(rec_t, host, 12),  RG_WIRE_INT(rec_t, one, 20),
};
#define REC_NFIELDS (sizeof(rec_wire) / sizeof(rec_wire[0]))

/* Every field lands little-endian at its offset, whatever the host. */
TEST_IMPL(wire_layout)
{
    rec_t         r = {-2, 10, 0x1f90, {198, 18, 0, 1}, 0x0102030405060708ull, 0xab};
    unsigned char b[24];
    const unsigned char want[24] = {0xfe, 0xff, 0xff, 0xff, 10, 0, 0x90, 0x1f, 198, 18, 0, 1,
                                    8, 7, 6, 5, 4, 3, 2, 1, 0xab, 0xee, 0xee, 0xee};

    memset(b, 0xee, sizeof(b));
    rg_wire_pack(b, &r, rec_wire, REC_NFIELDS);
    ASSERT(memcmp(b, want, sizeof(b)) == 0);
    return 0;
}

/* Unpacking gives the record back, signed fields included. */
TEST_IMPL(wire_roundtrip)
{
    rec_t         r = {INT32_MIN, 65535, 1, {255, 0, 127, 1}, UINT64_MAX, 1}, back;
    unsigned char b[24];

    memset(&back, 0, sizeof(back));
    rg_wire_pack(b, &r, rec_wire, REC_NFIELDS);
    rg_wire_unpack(b, &back, rec_wire, REC_NFIELDS);
    ASSERT_INT_EQ(back.status, INT32_MIN);
    ASSERT_INT_EQ(back.family, 65535);
    ASSERT_INT_EQ(back.port, 1);
    ASSERT(memcmp(back.ip, r.ip, 4) == 0);
    ASSERT(back.host == UINT64_MAX);
    ASSERT_INT_EQ(back.one, 1);
    ASSERT(rg_wire_get_uint(b + 12, 8) == UINT64_MAX);
    rg_wire_put_uint(b, 0x1234, 2);
    ASSERT(b[0] == 0x34 && b[1] == 0x12);
    ASSERT(rg_wire_get_uint(b, 2) == 0x1234);
    return 0;
}
