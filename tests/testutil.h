/* Helpers shared by the Check unit tests. */
#ifndef WB_TESTUTIL_H
#define WB_TESTUTIL_H

#include <check.h>
#include <stdint.h>
#include <time.h>
#include <stdlib.h>
#include "warble.h"

/* A small deterministic-per-run generator seeded from the clock (fresh data each run); the seed is
 * printed so a failure can be replayed with WB_SEED=... */
static inline uint64_t wbt_seed(void)
{
    const char *s = getenv("WB_SEED");
    return s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL);
}

static inline uint64_t wbt_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A 16-bit value (f16, or bf16 when bf) to double, and a double to the nearest one. */
static inline double wbt_half_to_double(int bf, uint32_t h)
{
    return bf ? wb_bf16_to_double((uint16_t)h) : wb_f16_to_double((uint16_t)h);
}

static inline uint32_t wbt_double_to_half(int bf, double v)
{
    return bf ? wb_bf16_from_double(v) : wb_f16_from_double(v);
}

/* fma.rn.f16x2 / bf16x2: on each 16-bit half, a * b (exact in double) + c, rounded once to nearest
 * even, subnormals kept. (Every fma of warble's dequant adds -0 or a value near a * b, so the double
 * sum is exact too.) */
static inline uint32_t wbt_fma_x2(int bf, uint32_t a, uint32_t b, uint32_t c)
{
    uint32_t r = 0;
    for (int h = 0; h < 2; h++) {
        int s = 16 * h;
        double v = wbt_half_to_double(bf, a >> s & 0xFFFF) * wbt_half_to_double(bf, b >> s & 0xFFFF) +
                   wbt_half_to_double(bf, c >> s & 0xFFFF);
        r |= wbt_double_to_half(bf, v) << s;
    }
    return r;
}

/* Run one suite and return the process exit code. */
static inline int wbt_run(Suite *s)
{
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
