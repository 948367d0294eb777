#include "base/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

rg_status_t rg_err_set(rg_err_t *err, rg_status_t status, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL) {
        return status;
    }
    err->status = status;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    return status;
}

rg_status_t rg_err_set_errno(rg_err_t *err, rg_status_t status, int errnum,
                             const char *fmt, ...)
{
    va_list ap;
    size_t  used;
    char    ebuf[128];

    if (err == NULL) {
        return status;
    }
    err->status = status;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    used = strlen(err->msg);
    /* strerror_r is the GNU variant under _GNU_SOURCE; copy the text it returns. */
    snprintf(err->msg + used, sizeof(err->msg) - used, ": %s",
             strerror_r(errnum, ebuf, sizeof(ebuf)));
    return status;
}

const char *rg_err_others(char *buf, size_t cap, int size, int self)
{
    size_t len = 0;
    int    r, named = 0, n;

    if (buf == NULL || cap == 0) {
        return buf;
    }
    buf[0] = '\0';
    n      = snprintf(buf, cap, "%s", size - (self >= 0 && self < size) > 1 ? "ranks" : "rank");
    len    = n > 0 ? (size_t)n : 0;
    for (r = 0; r < size && len < cap; r++) {
        if (r == self) {
            continue;
        }
        if (named == 8) {
            n = snprintf(buf + len, cap - len, ", ...");
            break;
        }
        n = snprintf(buf + len, cap - len, "%s %d", named > 0 ? "," : "", r);
        if (n < 0) {
            break;
        }
        len += (size_t)n;
        named++;
    }
    return buf;
}

void rg_err_clear(rg_err_t *err)
{
    if (err != NULL) {
        err->status = RG_OK;
        err->msg[0] = '\0';
    }
}

const char *rg_err_message(const rg_err_t *err)
{
    if (err == NULL) {
        return "";
    }
    if (err->msg[0] != '\0') {
        return err->msg;
    }
    return rg_status_string(err->status);
}
