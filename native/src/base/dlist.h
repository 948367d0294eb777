/*
 * railgauge: intrusive doubly-linked lists, one implementation for every
 * element type.
 *
 * An element is any struct with `next` and `prev` pointers to its own type; a
 * list is any struct with `head` and `tail` pointers to the element type.
 * RG_DLIST_FUNCS(pfx, list_t, elem_t) defines, for that pair of types,
 *
 *   static void pfx_append(list_t *l, elem_t *e);   e at the tail
 *   static void pfx_unlink(list_t *l, elem_t *e);   e out, its links cleared
 *
 * in O(1), never allocating. The functions are static inline, so a file
 * that defines them pays nothing for those it does not call.
 */
#ifndef RG_BASE_DLIST_H
#define RG_BASE_DLIST_H

#include <stddef.h>

#define RG_DLIST_FUNCS(pfx, list_t, elem_t)                                   \
    static inline void pfx##_append(list_t *l, elem_t *e)                     \
    {                                                                         \
        e->next = NULL;                                                       \
        e->prev = l->tail;                                                    \
        if (l->tail != NULL) {                                                \
            l->tail->next = e;                                                \
        } else {                                                              \
            l->head = e;                                                      \
        }                                                                     \
        l->tail = e;                                                          \
    }                                                                         \
    static inline void pfx##_unlink(list_t *l, elem_t *e)                     \
    {                                                                         \
        if (e->prev != NULL) {                                                \
            e->prev->next = e->next;                                          \
        } else {                                                              \
            l->head = e->next;                                                \
        }                                                                     \
        if (e->next != NULL) {                                                \
            e->next->prev = e->prev;                                          \
        } else {                                                              \
            l->tail = e->prev;                                                \
        }                                                                     \
        e->next = e->prev = NULL;                                             \
    }

#endif /* RG_BASE_DLIST_H */
