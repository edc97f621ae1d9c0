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
