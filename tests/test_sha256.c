/* wb_sha256_hex against the FIPS 180-4 / NIST test vectors, and every padding boundary. */
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

static void check_hash(const void *data, size_t len, const char *expect)
{
    char out[65];
    memset(out, 'x', sizeof out);
    wb_sha256_hex(data, len, out);
    ck_assert_str_eq(out, expect);
}

START_TEST(test_empty)
{
    check_hash("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}
END_TEST

START_TEST(test_abc)
{
    check_hash("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}
END_TEST

START_TEST(test_448_bits)
{
    const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    ck_assert_uint_eq(strlen(m), 56);
    check_hash(m, strlen(m), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}
END_TEST

START_TEST(test_896_bits)
{
    const char *m = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrs"
                    "mnopqrstnopqrstu";
    check_hash(m, strlen(m), "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}
END_TEST

START_TEST(test_million_a)
{
    size_t n = 1000000;
    char *m = malloc(n);
    ck_assert_ptr_nonnull(m);
    memset(m, 'a', n);
    check_hash(m, n, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(m);
}
END_TEST

/* Lengths around the 55/56/64-byte padding boundaries: known digests of n 'a' characters. */
START_TEST(test_padding_boundaries)
{
    static const struct {
        size_t n;
        const char *hex;
    } cases[] = {
        {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
        {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
        {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
        {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
        {65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"},
    };
    char m[128];
    memset(m, 'a', sizeof m);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_hash(m, cases[i].n, cases[i].hex);
}
END_TEST

static Suite *sha256_suite(void)
{
    Suite *s = suite_create("sha256");
    TCase *tc = tcase_create("vectors");
    tcase_add_test(tc, test_empty);
    tcase_add_test(tc, test_abc);
    tcase_add_test(tc, test_448_bits);
    tcase_add_test(tc, test_896_bits);
    tcase_add_test(tc, test_million_a);
    tcase_add_test(tc, test_padding_boundaries);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return wbt_run(sha256_suite()); }
