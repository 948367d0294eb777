/*
 * railgauge: an error status together with a message that names its cause.
 *
 * The function that detects an error fills an rg_err_t once (with errno's text
 * where a system call failed); callers only pass the status on. Tools map the
 * status to an exit code and print the message.
 */
#ifndef RG_BASE_ERROR_H
#define RG_BASE_ERROR_H

#include <stddef.h>

#include "base/status.h"

#define RG_ERR_MSG_MAX 512

typedef struct rg_err {
    rg_status_t status;
    char        msg[RG_ERR_MSG_MAX];
} rg_err_t;

/* Records status and a printf-style message in err (which may be NULL) and
 * returns status, so that `return rg_err_set(err, RG_ERR_IO, "...")` works. */
rg_status_t rg_err_set(rg_err_t *err, rg_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* As rg_err_set(), with ": <strerror(errnum)>" appended. */
rg_status_t rg_err_set_errno(rg_err_t *err, rg_status_t status, int errnum,
                             const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Clears err to RG_OK and an empty message. */
void rg_err_clear(rg_err_t *err);

/* Writes the ranks of 0 .. size-1 other than self into buf ("rank 1", "ranks
 * 0, 2, 3", at most eight named and then "..."), for messages about every
 * other rank; returns buf. */
const char *rg_err_others(char *buf, size_t cap, int size, int self);

/* The message, or the status text where no message was recorded. */
const char *rg_err_message(const rg_err_t *err);

#endif /* RG_BASE_ERROR_H */
