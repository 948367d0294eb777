/*
 * railgauge: intrusive lists, one implementation for every element type:
 * doubly-linked lists, and singly-linked queues for elements with room for
 * one link only.
 *
 * An element is any struct with `next` and `prev` pointers to its own type; a
 * list is any struct with `head` and `tail` pointers to the element type.
 * RG_DLIST_FUNCS(pfx, list_t, elem_t) defines, for that pair of types,
 *
 *   static void pfx_append(list_t *l, elem_t *e);   e at the tail
 *   static void pfx_unlink(list_t *l, elem_t *e);   e out, its links cleared
 *
 * in O(1), never allocating.
 *
 * RG_SLIST_FUNCS(pfx, list_t, elem_t, link) defines a FIFO queue of elements
 * linked through their one pointer field `link` (an element that sits on
 * several queues at once has one such field per queue; an element whose
 * size is counted, as the runtime's memory accounting counts its buffers,
 * has no room for a second pointer), for a list struct with `head` and
 * `tail`:
 *
 *   static void    pfx_append(list_t *l, elem_t *e);   e at the tail
 *   static elem_t *pfx_pop(list_t *l);                 the head out, or NULL
 *   static void    pfx_unlink_after(list_t *l, elem_t *prev, elem_t *e);
 *                  e out, prev the element before it (NULL: e is the head),
 *                  for a walk that takes elements out as it goes
 *
 * in O(1), never allocating; an element taken out has its link cleared.
 *
 * The functions are static inline, so a file that defines them pays nothing
 * for those it does not call.
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

#define RG_SLIST_FUNCS(pfx, list_t, elem_t, link)                             \
    static inline void pfx##_append(list_t *l, elem_t *e)                     \
    {                                                                         \
        e->link = NULL;                                                       \
        if (l->tail != NULL) {                                                \
            l->tail->link = e;                                                \
        } else {                                                              \
            l->head = e;                                                      \
        }                                                                     \
        l->tail = e;                                                          \
    }                                                                         \
    static inline void pfx##_unlink_after(list_t *l, elem_t *prev, elem_t *e) \
    {                                                                         \
        if (prev != NULL) {                                                   \
            prev->link = e->link;                                             \
        } else {                                                              \
            l->head = e->link;                                                \
        }                                                                     \
        if (l->tail == e) {                                                   \
            l->tail = prev;                                                   \
        }                                                                     \
        e->link = NULL;                                                       \
    }                                                                         \
    static inline elem_t *pfx##_pop(list_t *l)                                \
    {                                                                         \
        elem_t *e = l->head;                                                  \
                                                                              \
        if (e != NULL) {                                                      \
            pfx##_unlink_after(l, NULL, e);                                   \
        }                                                                     \
        return e;                                                             \
    }

#endif /* RG_BASE_DLIST_H */
