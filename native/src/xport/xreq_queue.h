/*
 * railgauge: the FIFO of posted requests that every transport keeps per peer
 * (internal to xport/). The queue is two pointers owned by the transport and
 * linked through rg_xreq_t.next, so posting never allocates.
 */
#ifndef RG_XPORT_XREQ_QUEUE_H
#define RG_XPORT_XREQ_QUEUE_H

#include <stddef.h>

#include "xport/xport.h"

static inline void rg__xreq_queue_push(rg_xreq_t **first, rg_xreq_t **last, rg_xreq_t *req)
{
    req->next = NULL;
    if (*first == NULL) {
        *first = req;
    } else {
        (*last)->next = req;
    }
    *last = req;
}

/* Takes the first request; the queue must not be empty. */
static inline rg_xreq_t *rg__xreq_queue_pop(rg_xreq_t **first, rg_xreq_t **last)
{
    rg_xreq_t *req = *first;

    *first = req->next;
    if (*first == NULL) {
        *last = NULL;
    }
    req->next = NULL;
    return req;
}

/* Completes every queued request with status (a transport that failed). */
static inline void rg__xreq_queue_fail(rg_xreq_t **first, rg_xreq_t **last, rg_status_t status)
{
    while (*first != NULL) {
        rg__xreq_queue_pop(first, last)->status = status;
    }
}

#endif /* RG_XPORT_XREQ_QUEUE_H */
