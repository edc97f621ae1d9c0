/* Weight packing: pack then unpack is the identity; scale and zero records sit where the kernel reads. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lower/layout.h"
#include "testutil.h"

static void random_codes(uint8_t *c, size_t n, uint64_t *st)
{
    for (size_t i = 0; i < n; i++)
        c[i] = (uint8_t)(wbt_next(st) & 15);
}

START_TEST(pack_unpack_identity)
{
    uint64_t st = wbt_seed();
    static const int64_t shapes[][2] = {{16, 64}, {48, 128}, {64, 256}, {256, 512}};
    char spec[96];
    for (int bits = 1; bits <= 8; bits++)
        for (int kind = 0; kind < 3; kind++)
            for (size_t hi = 0; hi < 4; hi++) {
                static const char *const kinds[] = {"a=f16,w=int%d,g=64", "a=bf16,w=uint%d,zp=int,g=32",
                                                    "a=bf16,w=uint%d,g=0"};
                snprintf(spec, sizeof spec, kinds[kind], bits);
                wb_format f;
                ck_assert_int_eq(wb_format_parse(spec, &f), WB_OK);
                int64_t n = shapes[hi][0], k = shapes[hi][1], groups = f.g ? k / f.g : 1;
                uint8_t *w = malloc((size_t)(n * k)), *back = malloc((size_t)(n * k)), *z = malloc((size_t)(n * groups));
                uint16_t *s = malloc((size_t)(n * groups) * 2);
                for (int64_t i = 0; i < n * k; i++)
                    w[i] = (uint8_t)(wbt_next(&st) & ((1u << bits) - 1));
                for (int64_t i = 0; i < n * groups; i++) {
                    z[i] = (uint8_t)(wbt_next(&st) & ((1u << bits) - 1));
                    s[i] = wb_bf16_from_double((double)(wbt_next(&st) % 1000) / 977.0 - 0.5);
                }
                wb_host_weights hw = {.w = w, .w_scale = s, .w_zero = f.zp == WB_ZP_INT ? z : NULL};
                wb_packed p;
                ck_assert_msg(wb_pack_weights(&f, WB_ARCH_SM90A, n, k, &hw, &p) == WB_OK, "%s: %s", spec, wb_last_error());
                ck_assert_uint_eq(p.w_bytes, (size_t)(n * k * bits / 8)); /* dense: B bits per code */
                ck_assert_int_eq(wb_unpack_codes(&f, WB_ARCH_SM90A, n, k, &p, back), WB_OK);
                ck_assert_mem_eq(w, back, (size_t)(n * k));
                wb_packed_free(&p);
                free(w);
                free(back);
                free(z);
                free(s);
            }
}
END_TEST

START_TEST(scale_and_zero_records)
{
    uint64_t st = wbt_seed() ^ 0x5a5a;
    wb_format f;
    ck_assert_int_eq(wb_format_parse("w4a16-zp,g=64", &f), WB_OK);
    int64_t n = 32, k = 128, groups = k / 64;
    uint8_t w[32 * 128], z[32 * 2];
    uint16_t s[32 * 2];
    random_codes(w, sizeof w, &st);
    random_codes(z, sizeof z, &st);
    for (int i = 0; i < 64; i++)
        s[i] = wb_f16_from_double(0.01 * (i + 1));
    wb_host_weights hw = {.w = w, .w_scale = s, .w_zero = z};
    wb_packed p;
    ck_assert_int_eq(wb_pack_weights(&f, WB_ARCH_SM90A, n, k, &hw, &p), WB_OK);
    ck_assert_uint_eq(p.scale_bytes, (size_t)(n / 16 * groups * 64));
    const uint16_t *r = p.scale;
    for (int64_t strip = 0; strip < n / 16; strip++)
        for (int64_t q = 0; q < groups; q++)
            for (int i = 0; i < 16; i++) {
                const uint16_t *rec = r + (strip * groups + q) * 32;
                int64_t row = strip * 16 + i;
                int half = (i % 8) * 2 + i / 8;
                ck_assert_uint_eq(rec[half], s[row * groups + q]);
                ck_assert(wb_f16_to_double(rec[16 + half]) == -(1024.0 + z[row * groups + q]));
            }
    wb_packed_free(&p);
}
END_TEST

/* W8A8 (a=s8 with w=int8, or fp8 with fp8 where its kernels take registers: the same layout for any
 * 8-bit code): each lane's 8 words are its m16n8k32 A registers of the two k32 steps, s8 codes as
 * bytes (row gid + 8 * (reg & 1), k step*32 + (reg >> 1)*16 + tig*4 + byte); unpacking inverts it;
 * the chan array holds the f32 channel scales, then the biases. (sm_89: fp8 on sm_90a has its own
 * layout, pack_fp8_smem_operand.) */
START_TEST(pack_w8a8_fragments)
{
    uint64_t st = wbt_seed() ^ 0x8a8;
    static const int64_t shapes[][2] = {{16, 64}, {48, 128}, {256, 512}};
    static const char *const specs[] = {"int8", "int8,bias=1", "fp8,bias=1", "a=e5m2,w=e5m2,ws=f32,g=0"};
    for (size_t sp = 0; sp < 4; sp++)
        for (size_t hi = 0; hi < 3; hi++) {
            wb_format f;
            ck_assert_int_eq(wb_format_parse(specs[sp], &f), WB_OK);
            int bias = f.bias;
            int64_t n = shapes[hi][0], k = shapes[hi][1];
            uint8_t *w = malloc((size_t)(n * k)), *back = malloc((size_t)(n * k));
            float *s = malloc((size_t)n * sizeof *s);
            uint16_t *b = malloc((size_t)n * sizeof *b);
            for (int64_t i = 0; i < n * k; i++) {
                w[i] = (uint8_t)wbt_next(&st);
                if (f.w.kind == WB_KIND_FLOAT && !isfinite(wb_type_decode(f.w, w[i])))
                    w[i] = 0; /* fp8 NaN and infinities are refused (below) */
            }
            for (int64_t i = 0; i < n; i++) {
                s[i] = (float)(wbt_next(&st) % 1000) / 977.0f + 0.001f;
                b[i] = wb_bf16_from_double((double)(wbt_next(&st) % 100) - 50.0);
            }
            wb_host_weights hw = {.w = w, .w_scale = s, .bias = bias ? b : NULL};
            wb_packed p;
            ck_assert_msg(wb_pack_weights(&f, WB_ARCH_SM89, n, k, &hw, &p) == WB_OK, "%s", wb_last_error());
            ck_assert_uint_eq(p.w_bytes, (size_t)(n * k));
            ck_assert_uint_eq(p.scale_bytes, 0);
            ck_assert_uint_eq(p.chan_bytes, (size_t)n * 4 * (bias ? 2 : 1));
            const uint32_t *pw = p.w;
            for (int64_t strip = 0; strip < n / 16; strip++)
                for (int64_t chunk = 0; chunk < k / 64; chunk++)
                    for (int lane = 0; lane < 32; lane++)
                        for (int word = 0; word < 8; word++)
                            for (int byte = 0; byte < 4; byte++) {
                                int step = word / 4, reg = word % 4, gid = lane / 4, tig = lane % 4;
                                int64_t row = strip * 16 + gid + 8 * (reg & 1);
                                int64_t col = chunk * 64 + step * 32 + (reg >> 1) * 16 + tig * 4 + byte;
                                int at = word ^ (gid & 1 ? 4 : 0); /* the steps swapped where gid is odd */
                                uint32_t v = pw[((strip * (k / 64) + chunk) * 32 + lane) * 8 + at];
                                ck_assert_uint_eq((v >> (8 * byte)) & 0xff, w[row * k + col]);
                            }
            ck_assert_int_eq(wb_unpack_codes(&f, WB_ARCH_SM89, n, k, &p, back), WB_OK);
            ck_assert_mem_eq(w, back, (size_t)(n * k));
            const float *pc = p.chan;
            for (int64_t i = 0; i < n; i++) {
                ck_assert(pc[i] == s[i]);
                if (bias)
                    ck_assert(pc[n + i] == (float)wb_bf16_to_double(b[i]));
            }
            wb_packed_free(&p);
            free(w);
            free(back);
            free(s);
            free(b);
        }
}
END_TEST

/* fp8 W8A8 on sm_90a (wb_w8_smem_operand): per strip of 16 channels and k128 chunk, 2048 bytes that
 * are wgmma's K-major 128B-swizzled tile: byte 1024 a + 128 r + 16 p + b holds channel 8 a + r of the
 * strip, k 16 (p ^ r) + b of the chunk. Read back here byte by byte from that statement; unpacking
 * inverts it; K must be a multiple of 128; every other 8-bit W8A8 format and target keeps the
 * fragment layout. */
START_TEST(pack_fp8_smem_operand)
{
    uint64_t st = wbt_seed() ^ 0xf8;
    static const int64_t shapes[][2] = {{16, 128}, {48, 256}, {128, 384}};
    static const char *const specs[] = {"fp8", "a=e5m2,w=e5m2,ws=f32,g=0,bias=1", "a=e4m3,w=e5m2,ws=f32,g=0"};
    for (size_t sp = 0; sp < 3; sp++)
        for (size_t hi = 0; hi < 3; hi++) {
            wb_format f;
            ck_assert_int_eq(wb_format_parse(specs[sp], &f), WB_OK);
            ck_assert(wb_w8_smem_operand(&f, WB_ARCH_SM90A));
            int64_t n = shapes[hi][0], k = shapes[hi][1];
            uint8_t *w = malloc((size_t)(n * k)), *back = malloc((size_t)(n * k));
            float *s = malloc((size_t)n * sizeof *s);
            uint16_t *b = calloc((size_t)n, sizeof *b);
            for (int64_t i = 0; i < n * k; i++)
                do
                    w[i] = (uint8_t)wbt_next(&st);
                while (!isfinite(wb_type_decode(f.w, w[i])));
            for (int64_t i = 0; i < n; i++)
                s[i] = 1.0f + (float)i;
            wb_host_weights hw = {.w = w, .w_scale = s, .bias = f.bias ? b : NULL};
            wb_packed p;
            ck_assert_msg(wb_pack_weights(&f, WB_ARCH_SM90A, n, k, &hw, &p) == WB_OK, "%s", wb_last_error());
            ck_assert_uint_eq(p.w_bytes, (size_t)(n * k));
            const uint8_t *pb = p.w;
            for (int64_t strip = 0; strip < n / 16; strip++)
                for (int64_t chunk = 0; chunk < k / 128; chunk++)
                    for (int at = 0; at < 2048; at++) {
                        int a = at / 1024, r = at / 128 % 8, pos = at / 16 % 8, byte = at % 16;
                        int64_t row = strip * 16 + 8 * a + r, col = chunk * 128 + 16 * (pos ^ r) + byte;
                        ck_assert_uint_eq(pb[(strip * (k / 128) + chunk) * 2048 + at], w[row * k + col]);
                    }
            ck_assert_int_eq(wb_unpack_codes(&f, WB_ARCH_SM90A, n, k, &p, back), WB_OK);
            ck_assert_mem_eq(w, back, (size_t)(n * k));
            wb_packed_free(&p);
            ck_assert_int_eq(wb_pack_weights(&f, WB_ARCH_SM90A, 16, 192, &hw, &p), WB_ERR_UNSUPPORTED);
            ck_assert_ptr_nonnull(strstr(wb_last_error(), "K must be a multiple of 128 (got 192)"));
            ck_assert_ptr_null(p.w);
            free(w);
            free(back);
            free(s);
            free(b);
        }
    static const struct { const char *spec; wb_arch arch; } fragment[] = {
        {"fp8", WB_ARCH_SM89}, {"fp8", WB_ARCH_SM100A}, {"fp8", WB_ARCH_SM120A}, {"int8", WB_ARCH_SM90A},
        {"a=e4m3,w=int4,ws=f32,g=0", WB_ARCH_SM90A}, {"a=f16,w=e4m3,ws=f32,g=0", WB_ARCH_SM90A},
    };
    for (size_t i = 0; i < sizeof fragment / sizeof fragment[0]; i++) {
        wb_format f;
        ck_assert_int_eq(wb_format_parse(fragment[i].spec, &f), WB_OK);
        ck_assert_msg(!wb_w8_smem_operand(&f, fragment[i].arch), "%s", fragment[i].spec);
    }
}
END_TEST

/* NVFP4 x NVFP4 on sm_120a (the block-scaled MMA): the codes as the m16n8k64 A registers, a negative
 * e4m3 block scale's sign moved onto its 16 codes; in each (strip, k64 chunk) region of the scale
 * buffer, u32 r holding channel r's four scale magnitudes, block j in byte j. On sm_90a the same
 * format keeps the 16-bit layout. A NaN scale is refused. */
START_TEST(pack_block_scaled_fp4)
{
    uint64_t st = wbt_seed() ^ 0xb5;
    wb_format f;
    ck_assert_int_eq(wb_format_parse("nvfp4", &f), WB_OK);
    int64_t n = 32, k = 128, groups = k / 16;
    uint8_t *w = malloc((size_t)(n * k)), *back = malloc((size_t)(n * k)), *s = malloc((size_t)(n * groups));
    for (int64_t i = 0; i < n * k; i++)
        w[i] = (uint8_t)(wbt_next(&st) & 15);
    for (int64_t i = 0; i < n * groups; i++) /* finite e4m3 codes of either sign */
        s[i] = (uint8_t)((wbt_next(&st) % 0x7E + 1) | (wbt_next(&st) % 2 ? 0x80 : 0));
    float wg = 0.5f;
    wb_host_weights hw = {.w = w, .w_scale = s, .w_global = &wg};
    wb_packed p, q;
    ck_assert_msg(wb_pack_weights(&f, WB_ARCH_SM120A, n, k, &hw, &p) == WB_OK, "%s", wb_last_error());
    ck_assert_msg(wb_pack_weights(&f, WB_ARCH_SM90A, n, k, &hw, &q) == WB_OK, "%s", wb_last_error());
    ck_assert_uint_eq(p.w_bytes, q.w_bytes);
    ck_assert_uint_eq(p.scale_bytes, q.scale_bytes);
    ck_assert_int_ne(memcmp(p.w, q.w, p.w_bytes), 0);
    const uint32_t *pw = p.w;
    const uint8_t *ps = p.scale;
    for (int64_t row = 0; row < n; row++)
        for (int64_t col = 0; col < k; col++) {
            int64_t strip = row / 16, chunk = col / 64, r = row % 16, kk = col % 64;
            int lane = (int)(r % 8) * 4 + (int)(kk % 32) / 8, reg = (int)(kk / 32) * 2 + (int)(r >= 8);
            uint32_t v = pw[((strip * (k / 64) + chunk) * 32 + lane) * 4 + reg];
            uint8_t sc = s[row * groups + col / 16];
            ck_assert_uint_eq((v >> (4 * (kk % 8))) & 15, w[row * k + col] ^ (sc & 0x80 ? 8 : 0));
            ck_assert_uint_eq(ps[(strip * (k / 64) + chunk) * 128 + r * 4 + kk / 16], sc & 0x7F);
        }
    ck_assert_int_eq(wb_unpack_codes(&f, WB_ARCH_SM120A, n, k, &p, back), WB_OK);
    for (int64_t i = 0; i < n * k; i++)
        ck_assert_uint_eq(back[i], w[i] ^ (s[i / k * groups + i % k / 16] & 0x80 ? 8 : 0));
    ck_assert_float_eq(((const float *)p.chan)[0], 0.5f);
    wb_packed_free(&p);
    wb_packed_free(&q);
    s[5] = 0x7F; /* e4m3 NaN */
    ck_assert_int_eq(wb_pack_weights(&f, WB_ARCH_SM120A, n, k, &hw, &p), WB_ERR_INVALID);
    free(w);
    free(back);
    free(s);
}
END_TEST

/* W4A4: int4 weights as the m16n8k64 s4 A registers (word j: channel gid + 8 (j & 1), k 32 (j >> 1) +
 * 8 tig + i in nibble i), written out from the PTX ISA's fragment table; and s4 activations two to a
 * byte, k even in the low nibble (wb_pack_acts), 8-bit ones as they are, with bad codes refused. */
START_TEST(pack_w4a4_fragments_and_acts)
{
    uint64_t st = wbt_seed() ^ 0x4a4;
    wb_format f;
    ck_assert_int_eq(wb_format_parse("w4a4-int4", &f), WB_OK);
    int64_t n = 48, k = 256;
    uint8_t *w = malloc((size_t)(n * k)), *back = malloc((size_t)(n * k));
    float *s = malloc((size_t)n * sizeof *s);
    for (int64_t i = 0; i < n * k; i++)
        w[i] = (uint8_t)(wbt_next(&st) & 15);
    for (int64_t i = 0; i < n; i++)
        s[i] = 1.0f;
    wb_host_weights hw = {.w = w, .w_scale = s};
    wb_packed p;
    ck_assert_msg(wb_pack_weights(&f, WB_ARCH_SM90A, n, k, &hw, &p) == WB_OK, "%s", wb_last_error());
    ck_assert_uint_eq(p.w_bytes, (size_t)(n * k / 2));
    const uint32_t *pw = p.w;
    for (int64_t strip = 0; strip < n / 16; strip++)
        for (int64_t chunk = 0; chunk < k / 64; chunk++)
            for (int lane = 0; lane < 32; lane++)
                for (int reg = 0; reg < 4; reg++)
                    for (int i = 0; i < 8; i++) {
                        int64_t row = strip * 16 + lane / 4 + 8 * (reg & 1);
                        int64_t col = chunk * 64 + 32 * (reg >> 1) + 8 * (lane % 4) + i;
                        uint32_t v = pw[((strip * (k / 64) + chunk) * 32 + lane) * 4 + reg];
                        ck_assert_uint_eq((v >> (4 * i)) & 15, w[row * k + col]);
                    }
    ck_assert_int_eq(wb_unpack_codes(&f, WB_ARCH_SM90A, n, k, &p, back), WB_OK);
    ck_assert_mem_eq(w, back, (size_t)(n * k));
    wb_packed_free(&p);

    /* activations: M x K codes -> M x K/2 bytes */
    int64_t m = 3, ka = 10;
    uint8_t a[30], packed[30];
    for (int i = 0; i < 30; i++)
        a[i] = (uint8_t)(wbt_next(&st) & 15);
    ck_assert_int_eq(wb_acts_bytes(&f, m, ka), 15);
    ck_assert_int_eq(wb_pack_acts(&f, m, ka, a, packed), WB_OK);
    for (int i = 0; i < 30; i++)
        ck_assert_uint_eq((packed[i / 2] >> (4 * (i % 2))) & 15, a[i]);
    uint8_t ex[2] = {13, 5}; /* -3, 5 -> 0x5D (docs/formats.md) */
    ck_assert_int_eq(wb_pack_acts(&f, 1, 2, ex, packed), WB_OK);
    ck_assert_uint_eq(packed[0], 0x5D);
    a[7] = 0x13;
    ck_assert_int_eq(wb_pack_acts(&f, m, ka, a, packed), WB_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "activation code 0x13 at (0, 7) has bits above the 4 low bits"));
    ck_assert_int_eq(wb_pack_acts(&f, 1, 9, a, packed), WB_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "need K even"));
    wb_format f8;
    ck_assert_int_eq(wb_format_parse("int8", &f8), WB_OK);
    ck_assert_int_eq(wb_acts_bytes(&f8, m, ka), 30);
    ck_assert_int_eq(wb_pack_acts(&f8, m, ka, a, packed), WB_OK);
    ck_assert_mem_eq(packed, a, 30);
    ck_assert_int_eq(wb_format_parse("w4a16", &f8), WB_OK);
    ck_assert_int_eq(wb_acts_bytes(&f8, m, ka), 60);
    ck_assert_int_eq(wb_pack_acts(&f8, m, ka, a, packed), WB_ERR_INVALID);
    free(w);
    free(back);
    free(s);
}
END_TEST

/* fp4 activations: the kernel makes a 16-bit tile of them, so the weights are packed exactly as for
 * 16-bit activations of the compute type (same words, same records), except that the weight tensor
 * scale is not folded into the records: it follows the biases in chan, as f32. */
START_TEST(pack_fp4_acts_like_16bit)
{
    uint64_t st = wbt_seed();
    static const char *const specs[][2] = {{"a=e2m1,ag=16,as=e4m3,w=e2m1,ws=e4m3,g=16", "a=f16,w=e2m1,ws=e4m3,g=16"},
                                           {"a=e2m1,ag=32,as=e8m0,w=int4,ws=e8m0,g=32", "a=bf16,w=int4,ws=e8m0,g=32"},
                                           {"a=e2m1,as=e4m3,w=uint3,ws=f16,g=128,zp=int", "a=f16,w=uint3,ws=f16,g=128,zp=int"}};
    int64_t n = 32, k = 256;
    for (size_t c = 0; c < 3; c++) {
        wb_format f, nat;
        ck_assert_int_eq(wb_format_parse(specs[c][0], &f), WB_OK);
        ck_assert_int_eq(wb_format_parse(specs[c][1], &nat), WB_OK);
        int64_t groups = k / f.g;
        uint8_t *w = malloc((size_t)(n * k)), *wn = malloc((size_t)(n * k)), *back = malloc((size_t)(n * k));
        uint8_t *s = malloc((size_t)(n * groups) * 2), *z = malloc((size_t)(n * groups));
        for (int64_t i = 0; i < n * k; i++)
            w[i] = (uint8_t)(wbt_next(&st) & ((1u << f.w.bits) - 1));
        for (int64_t i = 0; i < n * groups; i++) {
            z[i] = (uint8_t)(wbt_next(&st) & ((1u << f.w.bits) - 1));
            /* 1-byte scales (e4m3 0x30..0x3F, e8m0 120..135), or f16 ones */
            if (wb_type_file_bytes(f.ws) == 1)
                s[i] = (uint8_t)(f.ws.kind == WB_KIND_E8M0 ? 120 + wbt_next(&st) % 16 : 0x30 + wbt_next(&st) % 16);
            else
                ((uint16_t *)s)[i] = wb_f16_from_double(0.25 + (double)(wbt_next(&st) % 64) / 64.0);
        }
        memcpy(wn, w, (size_t)(n * k));
        wb_host_weights hw = {.w = w, .w_scale = s, .w_zero = f.zp == WB_ZP_INT ? z : NULL};
        wb_host_weights hn = {.w = wn, .w_scale = s, .w_zero = f.zp == WB_ZP_INT ? z : NULL};
        wb_packed p, q;
        ck_assert_msg(wb_pack_weights(&f, WB_ARCH_SM90A, n, k, &hw, &p) == WB_OK, "%s: %s", specs[c][0], wb_last_error());
        ck_assert_msg(wb_pack_weights(&nat, WB_ARCH_SM90A, n, k, &hn, &q) == WB_OK, "%s: %s", specs[c][1], wb_last_error());
        ck_assert_uint_eq(p.w_bytes, q.w_bytes);
        ck_assert_mem_eq(p.w, q.w, p.w_bytes);
        ck_assert_uint_eq(p.scale_bytes, q.scale_bytes);
        ck_assert_mem_eq(p.scale, q.scale, p.scale_bytes);
        ck_assert_int_eq(wb_unpack_codes(&f, WB_ARCH_SM90A, n, k, &p, back), WB_OK);
        ck_assert_mem_eq(w, back, (size_t)(n * k));
        wb_packed_free(&p);
        wb_packed_free(&q);
        free(w), free(wn), free(back), free(s), free(z);
    }
    /* the tensor scale stays out of the records: it follows the biases in chan, as f32 */
    wb_format f;
    ck_assert_int_eq(wb_format_parse("nvfp4,bias=1", &f), WB_OK);
    uint8_t w[16 * 64] = {0}, sc[16 * 4];
    uint16_t bias[16];
    float g = 0.375f;
    for (int i = 0; i < 16 * 4; i++)
        sc[i] = 0x38; /* 1.0 */
    for (int i = 0; i < 16; i++)
        bias[i] = wb_bf16_from_double(i);
    wb_host_weights hw = {.w = w, .w_scale = sc, .w_global = &g, .bias = bias};
    wb_packed p;
    ck_assert_int_eq(wb_pack_weights(&f, WB_ARCH_SM90A, 16, 64, &hw, &p), WB_OK);
    ck_assert_uint_eq(p.chan_bytes, 17 * 4);
    ck_assert(((float *)p.chan)[15] == 15.0f && ((float *)p.chan)[16] == 0.375f);
    ck_assert_uint_eq(((uint16_t *)p.scale)[0], wb_f16_from_double(1.0)); /* the e4m3 scale alone, in f16 */
    wb_packed_free(&p);
    g = INFINITY;
    ck_assert_int_eq(wb_pack_weights(&f, WB_ARCH_SM90A, 16, 64, &hw, &p), WB_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "tensor scale"));
}
END_TEST

START_TEST(pack_rejects_bad_codes_and_args)
{
    wb_format f;
    ck_assert_int_eq(wb_format_parse("w4a16", &f), WB_OK);
    uint8_t w[16 * 64];
    uint16_t s[16 * 1];
    memset(w, 3, sizeof w);
    memset(s, 0, sizeof s);
    w[5 * 64 + 7] = 0x13;
    f.g = 0;
    wb_host_weights hw = {.w = w, .w_scale = s};
    wb_packed p;
    ck_assert_int_eq(wb_pack_weights(&f, WB_ARCH_SM90A, 16, 64, &hw, &p), WB_ERR_INVALID);
    ck_assert_str_eq(wb_last_error(), "weight code 0x13 at (5, 7) has bits above the 4 low bits");
    w[5 * 64 + 7] = 1;
    wb_format e4;
    ck_assert_int_eq(wb_format_parse("a=bf16,w=e4m3,g=0", &e4), WB_OK);
    uint8_t nan_codes[16 * 64];
    memset(nan_codes, 0x38, sizeof nan_codes);
    nan_codes[3] = 0x7f; /* e4m3 NaN */
    wb_host_weights hn = {.w = nan_codes, .w_scale = s};
    ck_assert_int_eq(wb_pack_weights(&e4, WB_ARCH_SM90A, 16, 64, &hn, &p), WB_ERR_INVALID);
    ck_assert_str_eq(wb_last_error(), "weight code 0x7f at (0, 3) is not a finite value");
    ck_assert_ptr_null(p.w);
    /* fp8 W8A8 packs the codes as they are: a NaN or an infinity is refused there too */
    float s32[16] = {0};
    hn.w_scale = s32;
    ck_assert_int_eq(wb_format_parse("fp8", &e4), WB_OK);
    ck_assert_int_eq(wb_pack_weights(&e4, WB_ARCH_SM89, 16, 64, &hn, &p), WB_ERR_INVALID);
    ck_assert_str_eq(wb_last_error(), "weight code 0x7f at (0, 3) is not a finite value");
    ck_assert_int_eq(wb_format_parse("a=e4m3,w=e5m2,ws=f32,g=0", &e4), WB_OK);
    nan_codes[3] = 0x38;
    nan_codes[64 + 9] = 0xfc; /* e5m2 -infinity */
    ck_assert_int_eq(wb_pack_weights(&e4, WB_ARCH_SM89, 16, 64, &hn, &p), WB_ERR_INVALID);
    ck_assert_str_eq(wb_last_error(), "weight code 0xfc at (1, 9) is not a finite value");
    ck_assert_ptr_null(p.w);
    w[5 * 64 + 7] = 1;
    hw.bias = s;
    ck_assert_int_eq(wb_pack_weights(&f, WB_ARCH_SM90A, 16, 64, &hw, &p), WB_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "bias"));
    hw.bias = NULL;
    ck_assert_int_eq(wb_pack_weights(&f, WB_ARCH_SM90A, 16, 64, &hw, &p), WB_OK);
    wb_packed_free(&p);
    wb_packed_free(NULL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("pack");
    TCase *t = tcase_create("pack");
    tcase_add_test(t, pack_unpack_identity);
    tcase_add_test(t, scale_and_zero_records);
    tcase_add_test(t, pack_w8a8_fragments);
    tcase_add_test(t, pack_fp8_smem_operand);
    tcase_add_test(t, pack_w4a4_fragments_and_acts);
    tcase_add_test(t, pack_fp4_acts_like_16bit);
    tcase_add_test(t, pack_block_scaled_fp4);
    tcase_add_test(t, pack_rejects_bad_codes_and_args);
    suite_add_tcase(s, t);
    return wbt_run(s);
}
