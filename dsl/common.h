/* Internal helpers shared by every part of the library: errors and arenas. Not installed. */
#ifndef WB_COMMON_H
#define WB_COMMON_H

#include <stdarg.h>
#include <stddef.h>
#include "warble.h"

/* Record the one-line message of a failure on this thread and return `s`. */
wb_status wb_fail(wb_status s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Forget the last message (called on success paths that want a clean wb_last_error()). */
void wb_clear_error(void);

/* A bump arena: every allocation lives until wb_arena_destroy. Sticky out-of-memory flag. */
typedef struct wb_arena wb_arena;
wb_arena *wb_arena_create(void);
void wb_arena_destroy(wb_arena *a);
void *wb_arena_alloc(wb_arena *a, size_t bytes); /* zeroed; NULL only on out of memory */
char *wb_arena_strdup(wb_arena *a, const char *s);
char *wb_arena_printf(wb_arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A growable string (for PTX text). On allocation failure `failed` is set and appends stop. */
typedef struct wb_buf {
    char *data;
    size_t len, cap;
    int failed;
} wb_buf;
void wb_buf_printf(wb_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void wb_buf_vprintf(wb_buf *b, const char *fmt, va_list ap);
void wb_buf_free(wb_buf *b);

#define WB_COUNT(arr) (sizeof(arr) / sizeof((arr)[0]))

#endif
