/* Errors (a thread-local last message), version, status names, arenas and growable strings. */
#include "dsl/common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char last_error[1024];

wb_status wb_fail(wb_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return s;
}

void wb_clear_error(void) { last_error[0] = 0; }

const char *wb_last_error(void) { return last_error; }

const char *wb_version(void) { return WB_VERSION_STRING; }

const char *wb_status_str(wb_status s)
{
    switch (s) {
    case WB_OK: return "ok";
    case WB_ERR_INVALID: return "invalid input";
    case WB_ERR_UNSUPPORTED: return "not supported";
    case WB_ERR_NOMEM: return "out of memory";
    case WB_ERR_NO_DRIVER: return "no CUDA driver or GPU";
    case WB_ERR_DRIVER: return "CUDA driver error";
    case WB_ERR_JIT: return "PTX JIT failed";
    case WB_ERR_IO: return "I/O error";
    }
    return "unknown status";
}

/* ---- arena: a list of chunks, each allocation 16-byte aligned */

typedef struct chunk {
    struct chunk *next;
    size_t used, size;
    _Alignas(16) unsigned char data[];
} chunk;

struct wb_arena {
    chunk *head;
};

wb_arena *wb_arena_create(void) { return calloc(1, sizeof(wb_arena)); }

void wb_arena_destroy(wb_arena *a)
{
    if (!a)
        return;
    for (chunk *c = a->head, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    free(a);
}

void *wb_arena_alloc(wb_arena *a, size_t bytes)
{
    bytes = (bytes + 15) & ~(size_t)15;
    if (!a->head || a->head->size - a->head->used < bytes) {
        size_t size = bytes > 65536 ? bytes : 65536;
        chunk *c = malloc(sizeof(chunk) + size);
        if (!c)
            return NULL;
        c->next = a->head;
        c->used = 0;
        c->size = size;
        a->head = c;
    }
    void *p = a->head->data + a->head->used;
    a->head->used += bytes;
    memset(p, 0, bytes);
    return p;
}

char *wb_arena_strdup(wb_arena *a, const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = wb_arena_alloc(a, n);
    if (p)
        memcpy(p, s, n);
    return p;
}

char *wb_arena_printf(wb_arena *a, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *p = n < 0 ? NULL : wb_arena_alloc(a, (size_t)n + 1);
    if (p)
        vsnprintf(p, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    return p;
}

/* ---- growable strings */

void wb_buf_vprintf(wb_buf *b, const char *fmt, va_list ap)
{
    if (b->failed)
        return;
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0) {
        b->failed = 1;
        return;
    }
    if (b->len + (size_t)n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + (size_t)n + 1)
            cap *= 2;
        char *p = realloc(b->data, cap);
        if (!p) {
            b->failed = 1;
            return;
        }
        b->data = p;
        b->cap = cap;
    }
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void wb_buf_printf(wb_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    wb_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

void wb_buf_free(wb_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}
