/*
 * railgauge: the one status type shared by every layer.
 *
 * Functions return RG_OK (0), RG_INPROGRESS (1) or a negative error. The list
 * below is the single source: it generates the enum, rg_status_name() and
 * rg_status_string(), so C, the JSON output and the Python side share one
 * vocabulary (as libuv's UV_ERRNO_MAP and UCX's ucs_status_t do).
 */
#ifndef RG_BASE_STATUS_H
#define RG_BASE_STATUS_H

#define RG_STATUS_MAP(X)                                                        \
    X(OK,               0,  "success")                                          \
    X(INPROGRESS,       1,  "operation in progress")                            \
    X(ERR_INVALID,     -1,  "invalid argument")                                 \
    X(ERR_NOMEM,       -2,  "out of memory")                                    \
    X(ERR_IO,          -3,  "input/output error")                               \
    X(ERR_AGAIN,       -4,  "resource temporarily unavailable, try again")      \
    X(ERR_UNSUPPORTED, -5,  "operation not supported by this transport")        \
    X(ERR_NOT_FOUND,   -6,  "not found")                                        \
    X(ERR_TIMEOUT,     -7,  "timed out")                                        \
    X(ERR_PEER_DEAD,   -8,  "peer process died or closed its connection")       \
    X(ERR_TRUNCATED,   -9,  "message larger than the receive buffer")           \
    X(ERR_RANGE,       -10, "value out of range")                               \
    X(ERR_PARSE,       -11, "malformed input")                                  \
    X(ERR_BOOTSTRAP,   -12, "bootstrap with the launcher failed")               \
    X(ERR_BUSY,        -13, "resource busy")                                    \
    X(ERR_SYSTEM,      -14, "system call failed")                               \
    X(ERR_CANCELED,    -15, "operation canceled")

typedef enum rg_status {
#define RG__STATUS_ENUM(name, value, text) RG_##name = (value),
    RG_STATUS_MAP(RG__STATUS_ENUM)
#undef RG__STATUS_ENUM
} rg_status_t;

/* "RG_ERR_TRUNCATED" for a status; "RG_UNKNOWN" for a value not in the list. */
const char *rg_status_name(rg_status_t status);

/* A sentence describing the status; never NULL. */
const char *rg_status_string(rg_status_t status);

#endif /* RG_BASE_STATUS_H */
