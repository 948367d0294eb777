/* railgauge: records on the wire as tables (wire.h). */
#include "base/wire.h"

#include <string.h>

void rg_wire_put_uint(unsigned char *b, uint64_t v, size_t size)
{
    size_t i;

    for (i = 0; i < size; i++) {
        b[i] = (unsigned char)(v >> (8 * i));
    }
}

uint64_t rg_wire_get_uint(const unsigned char *b, size_t size)
{
    uint64_t v = 0;
    size_t   i;

    for (i = 0; i < size; i++) {
        v |= (uint64_t)b[i] << (8 * i);
    }
    return v;
}

/* The host's integer of f->size bytes at p, as its bits. */
static uint64_t rg__wire_load(const unsigned char *p, uint32_t size)
{
    uint8_t  v8;
    uint16_t v16;
    uint32_t v32;
    uint64_t v64;

    switch (size) {
    case 1:
        memcpy(&v8, p, 1);
        return v8;
    case 2:
        memcpy(&v16, p, 2);
        return v16;
    case 4:
        memcpy(&v32, p, 4);
        return v32;
    default:
        memcpy(&v64, p, 8);
        return v64;
    }
}

static void rg__wire_store(unsigned char *p, uint32_t size, uint64_t v)
{
    uint8_t  v8  = (uint8_t)v;
    uint16_t v16 = (uint16_t)v;
    uint32_t v32 = (uint32_t)v;

    switch (size) {
    case 1:
        memcpy(p, &v8, 1);
        break;
    case 2:
        memcpy(p, &v16, 2);
        break;
    case 4:
        memcpy(p, &v32, 4);
        break;
    default:
        memcpy(p, &v, 8);
        break;
    }
}

void rg_wire_pack(unsigned char *b, const void *rec, const rg_wire_field_t *f, size_t n)
{
    const unsigned char *r = rec;
    size_t               i;

    for (i = 0; i < n; i++) {
        if (f[i].raw) {
            memcpy(b + f[i].wire, r + f[i].at, f[i].size);
        } else {
            rg_wire_put_uint(b + f[i].wire, rg__wire_load(r + f[i].at, f[i].size), f[i].size);
        }
    }
}

void rg_wire_unpack(const unsigned char *b, void *rec, const rg_wire_field_t *f, size_t n)
{
    unsigned char *r = rec;
    size_t         i;

    for (i = 0; i < n; i++) {
        if (f[i].raw) {
            memcpy(r + f[i].at, b + f[i].wire, f[i].size);
        } else {
            rg__wire_store(r + f[i].at, f[i].size, rg_wire_get_uint(b + f[i].wire, f[i].size));
        }
    }
}
