/* Unit tests of dsl/format.c: presets, defaults, canonical printing (print . parse is the identity),
 * every rejection with its message, hand-filled structs, and the shape rules. */
#include <stdio.h>
#include <math.h>
#include <string.h>
#include "testutil.h"

static const char *canon(const char *spec)
{
    static char buf[256];
    wb_format f;
    wb_status s = wb_format_parse(spec, &f);
    ck_assert_msg(s == WB_OK, "'%s': %s", spec, wb_last_error());
    int n = wb_format_print(&f, buf, sizeof buf);
    ck_assert_int_eq(n, (int)strlen(buf));
    return buf;
}

/* print(parse(print(parse(s)))) == print(parse(s)), and the structs agree. */
static void check_identity(const char *spec)
{
    char first[256];
    wb_format f1, f2;
    ck_assert_int_eq(wb_format_parse(spec, &f1), WB_OK);
    wb_format_print(&f1, first, sizeof first);
    ck_assert_msg(wb_format_parse(first, &f2) == WB_OK, "%s: %s", first, wb_last_error());
    ck_assert_str_eq(canon(first), first);
    ck_assert(memcmp(&f1, &f2, sizeof f1) == 0);
    ck_assert_int_eq(wb_format_validate(&f1), WB_OK);
}

START_TEST(presets)
{
    ck_assert_int_ge(wb_preset_count(), 14);
    const char *want[] = {"w4a16", "w4a16-zp", "gptq-int3", "w8a16", "fp8", "fp8-block", "int8",
                          "w4a8-fp8", "w4a8-int8", "w4a4-int4", "mxfp4", "nvfp4", "nvfp4-a16", "mxint4"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        int found = 0;
        for (int j = 0; j < wb_preset_count(); j++)
            found |= !strcmp(wb_preset_name(j), want[i]);
        ck_assert_msg(found, "preset %s", want[i]);
    }
    for (int i = 0; i < wb_preset_count(); i++) {
        check_identity(wb_preset_name(i));
        check_identity(wb_preset_spec(i));
        char name_form[256];
        snprintf(name_form, sizeof name_form, "%s", canon(wb_preset_name(i)));
        ck_assert_str_eq(canon(wb_preset_spec(i)), name_form);
    }
    ck_assert_ptr_null(wb_preset_name(-1));
    ck_assert_ptr_null(wb_preset_spec(wb_preset_count()));
    ck_assert_str_eq(canon("w4a16"),
                     "a=f16,ag=0,as=f32,ags=0,w=int4,ws=f16,g=128,gn=1,wgs=0,zp=none,out=f16,bias=0,acc=f32");
    ck_assert_str_eq(canon("w4a16-zp"),
                     "a=f16,ag=0,as=f32,ags=0,w=uint4,ws=f16,g=128,gn=1,wgs=0,zp=int,out=f16,bias=0,acc=f32");
    ck_assert_str_eq(canon("fp8"),
                     "a=e4m3,ag=0,as=f32,ags=0,w=e4m3,ws=f32,g=0,gn=1,wgs=0,zp=none,out=bf16,bias=0,acc=f32");
    ck_assert_str_eq(canon("fp8-block"),
                     "a=e4m3,ag=128,as=f32,ags=0,w=e4m3,ws=f32,g=128,gn=128,wgs=0,zp=none,out=bf16,bias=0,acc=f32");
    ck_assert_str_eq(canon("int8"),
                     "a=s8,ag=0,as=f32,ags=0,w=int8,ws=f32,g=0,gn=1,wgs=0,zp=none,out=bf16,bias=0,acc=f32");
    ck_assert_str_eq(canon("mxfp4"),
                     "a=bf16,ag=0,as=f32,ags=0,w=e2m1,ws=e8m0,g=32,gn=1,wgs=0,zp=none,out=bf16,bias=0,acc=f32");
    ck_assert_str_eq(canon("nvfp4"),
                     "a=e2m1,ag=16,as=e4m3,ags=1,w=e2m1,ws=e4m3,g=16,gn=1,wgs=1,zp=none,out=bf16,bias=0,acc=f32");
}
END_TEST

START_TEST(defaults_and_overrides)
{
    ck_assert_str_eq(canon("w=int4"),
                     "a=f16,ag=0,as=f32,ags=0,w=int4,ws=f16,g=0,gn=1,wgs=0,zp=none,out=f16,bias=0,acc=f32");
    ck_assert_str_eq(canon("a=bf16,w=nf4"),
                     "a=bf16,ag=0,as=f32,ags=0,w=nf4,ws=bf16,g=0,gn=1,wgs=0,zp=none,out=bf16,bias=0,acc=f32");
    ck_assert_str_eq(canon("a=s4,w=int4"),
                     "a=s4,ag=0,as=f32,ags=0,w=int4,ws=f32,g=0,gn=1,wgs=0,zp=none,out=bf16,bias=0,acc=f32");
    ck_assert_str_eq(canon("a=e5m2,w=e5m2,out=f16"),
                     "a=e5m2,ag=0,as=f32,ags=0,w=e5m2,ws=f32,g=0,gn=1,wgs=0,zp=none,out=f16,bias=0,acc=f32");
    ck_assert_str_eq(canon("w4a16,g=64"),
                     "a=f16,ag=0,as=f32,ags=0,w=int4,ws=f16,g=64,gn=1,wgs=0,zp=none,out=f16,bias=0,acc=f32");
    ck_assert_str_eq(canon(" w4a16 , g = 64 ,bias=1, acc=f16 "),
                     "a=f16,ag=0,as=f32,ags=0,w=int4,ws=f16,g=64,gn=1,wgs=0,zp=none,out=f16,bias=1,acc=f16");
    /* a preset's ws stays when a changes; out follows the new a */
    ck_assert_str_eq(canon("w4a16,a=bf16"),
                     "a=bf16,ag=0,as=f32,ags=0,w=int4,ws=f16,g=128,gn=1,wgs=0,zp=none,out=bf16,bias=0,acc=f32");
    ck_assert_str_eq(canon("a=int8,w=int8"), canon("a=s8,w=int8"));
    ck_assert_str_eq(canon("w4a16-zp,zp=fp"),
                     "a=f16,ag=0,as=f32,ags=0,w=uint4,ws=f16,g=128,gn=1,wgs=0,zp=fp,out=f16,bias=0,acc=f32");
    ck_assert_str_eq(canon("w=int4,zp=fp,ws=f32"),
                     "a=f16,ag=0,as=f32,ags=0,w=int4,ws=f32,g=0,gn=1,wgs=0,zp=fp,out=f16,bias=0,acc=f32");
    ck_assert_str_eq(canon("fp8,acc=f16,out=f16"),
                     "a=e4m3,ag=0,as=f32,ags=0,w=e4m3,ws=f32,g=0,gn=1,wgs=0,zp=none,out=f16,bias=0,acc=f16");
    /* the explicit default values are accepted with f16 activations */
    check_identity("a=f16,ag=0,as=f32,ags=0,w=e5m2");
    check_identity("a=bf16,w=e7m0");
    check_identity("a=bf16,w=e6m1");
    check_identity("w=e5m2");
    check_identity("w=uint1,zp=int");
    check_identity("a=e2m1,as=e8m0,ag=32,w=e2m1,ws=e8m0,g=32");
}
END_TEST

/* Random specs over every key's values: each is accepted (and canonical print is the identity) or
 * rejected with a one-line message. */
START_TEST(random_specs)
{
    static const char *vals[13][10] = {
        {"f16", "bf16", "e4m3", "e5m2", "s8", "s4", "e2m1", NULL},
        {"0", "16", "32", "128", NULL},
        {"f32", "e4m3", "e8m0", NULL},
        {"0", "1", NULL},
        {"int4", "uint4", "int8", "uint3", "e2m1", "e4m3", "e6m1", "nf4", "int1", NULL},
        {"f16", "bf16", "f32", "e8m0", "e4m3", "e5m2", NULL},
        {"0", "16", "32", "128", NULL},
        {"1", "64", "128", NULL},
        {"0", "1", NULL},
        {"none", "int", "fp", NULL},
        {"f16", "bf16", NULL},
        {"0", "1", NULL},
        {"f32", "f16", NULL},
    };
    static const char *key[13] = {"a", "ag", "as", "ags", "w", "ws", "g", "gn", "wgs", "zp", "out", "bias", "acc"};
    uint64_t st = wbt_seed() + 3;
    int ok = 0;
    for (int it = 0; it < 20000; it++) {
        char spec[256] = "";
        for (int k = 0; k < 13; k++) {
            if (k != 4 && wbt_next(&st) % 3 == 0)
                continue;
            int nv = 0;
            while (vals[k][nv])
                nv++;
            snprintf(spec + strlen(spec), sizeof spec - strlen(spec), "%s%s=%s", *spec ? "," : "", key[k],
                     vals[k][wbt_next(&st) % (uint64_t)nv]);
        }
        wb_format f;
        if (wb_format_parse(spec, &f) == WB_OK) {
            check_identity(spec);
            ok++;
        } else {
            ck_assert(*wb_last_error() && !strchr(wb_last_error(), '\n'));
        }
    }
    ck_assert_int_gt(ok, 100);
}
END_TEST

static void reject(const char *spec, const char *fragment)
{
    wb_format f;
    memset(&f, 0x5a, sizeof f);
    wb_format keep = f;
    ck_assert_msg(wb_format_parse(spec, &f) == WB_ERR_INVALID, "'%s' accepted", spec);
    ck_assert_msg(strstr(wb_last_error(), fragment), "'%s': message '%s' lacks '%s'", spec, wb_last_error(),
                  fragment);
    ck_assert(!strchr(wb_last_error(), '\n'));
    ck_assert(memcmp(&f, &keep, sizeof f) == 0); /* out untouched on failure */
}

START_TEST(rejections)
{
    reject("w4a16,foo=1", "unknown key 'foo' (keys: a, ag, as, ags, w, ws, g, gn, wgs, zp, out, bias, acc)");
    reject("w=int9", "bad value 'int9' for w (int1..int8, uint1..uint8, eXmY, nf4, lut4:v0:...:v15)");
    reject("w=f16", "bad value 'f16' for w (");
    reject("w=e8m0", "bad value 'e8m0' for w");
    reject("w=e4m4", "bad value 'e4m4' for w");
    reject("w=", "bad value '' for w");
    reject("a=f32,w=int4", "bad value 'f32' for a (f16, bf16, e4m3, e5m2, s8, s4, e2m1)");
    reject("a=uint8,w=int4", "bad value 'uint8' for a");
    reject("a=e3m2,w=int4", "bad value 'e3m2' for a");
    reject("a=s8,as=f16,w=int4", "bad value 'f16' for as (f32, e4m3, e8m0)");
    reject("w=int4,ws=int8", "bad value 'int8' for ws (f16, bf16, f32, e8m0, e4m3, e5m2)");
    reject("w=int4,ws=e2m1", "bad value 'e2m1' for ws");
    reject("w=int4,out=f32", "bad value 'f32' for out (f16, bf16)");
    reject("w=int4,acc=bf16", "bad value 'bf16' for acc (f32, f16)");
    reject("w=int4,zp=yes", "bad value 'yes' for zp (none, int, fp)");
    reject("w=int4,g=-1", "bad value '-1' for g (");
    reject("w=int4,g=x", "bad value 'x' for g");
    reject("w=int4,g=1e3", "bad value '1e3' for g");
    reject("w=int4,g=99999999999", "bad value '99999999999' for g");
    reject("w=int4,gn=0", "bad value '0' for gn (");
    reject("w=int4,bias=2", "bad value '2' for bias (0, 1)");
    reject("w=int4,wgs=yes", "bad value 'yes' for wgs (0, 1)");
    reject("a=s8,w=int4,ags=2", "bad value '2' for ags (0, 1)");
    reject("w4a16,g=64,g=32", "duplicate key 'g'");
    reject("w=int4,w=int8", "duplicate key 'w'");
    reject("a=f16", "missing key w (int1..int8, uint1..uint8, eXmY, nf4, lut4:v0:...:v15)");
    reject("", "empty spec");
    reject("   ", "empty spec");
    reject("w4a16,", "empty item");
    reject("w4a16,,g=64", "empty item");
    reject("nosuch", "unknown preset 'nosuch' (presets: w4a16, w4a16-zp");
    reject("w=int4,w4a16", "expected key=value, got 'w4a16'");
    reject("=int4", "unknown key ''");
    reject("w4a16,ag=32", "ag=32 is for quantized activations; with a=f16, ag must be 0");
    reject("w4a16,as=e8m0", "as=e8m0 is for quantized activations; with a=f16, as must be f32");
    reject("mxfp4,ags=1", "ags=1 is for quantized activations; with a=bf16, ags must be 0");
    reject("nvfp4,a=f16", "ag=16 is for quantized activations; with a=f16");
    reject("w=int4,gn=128", "gn=128 needs g > 0 (with g=0, gn must be 1)");
    reject("w=int4,zp=int", "zp=int needs w=uintB (uint1..uint8), not w=int4");
    reject("w=nf4,zp=int", "zp=int needs w=uintB");
    reject("w=e2m1,zp=fp", "zp=fp needs w=intB or w=uintB, not w=e2m1");
    reject("w=uint4,zp=fp,ws=e8m0", "zp=fp needs ws=f16, bf16 or f32, not ws=e8m0");
    reject("a=bf16,w=int4,acc=f16", "acc=f16 needs a=f16 or a=e4m3, not a=bf16");
    reject("int8,acc=f16", "acc=f16 needs a=f16 or a=e4m3, not a=s8");
    reject("w=e6m1", "w=e6m1 with a=f16 needs at most 5 exponent bits");
    reject("w=e7m0", "w=e7m0 with a=f16 needs at most 5 exponent bits");
    wb_format f;
    ck_assert_int_eq(wb_format_parse(NULL, &f), WB_ERR_INVALID);
    ck_assert_int_eq(wb_format_parse("w4a16", NULL), WB_ERR_INVALID);
}
END_TEST

START_TEST(validate_hand_filled)
{
    wb_format f;
    ck_assert_int_eq(wb_format_parse("w4a16", &f), WB_OK);
    wb_format g = f;
    g.w.kind = WB_KIND_NONE;
    ck_assert_int_eq(wb_format_validate(&g), WB_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "for w ("));
    g = f;
    g.w.bits = 9;
    ck_assert_int_eq(wb_format_validate(&g), WB_ERR_INVALID);
    g = f;
    g.g = -5;
    ck_assert_int_eq(wb_format_validate(&g), WB_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "bad value '-5' for g"));
    g = f;
    g.zp = (wb_zp)7;
    ck_assert_int_eq(wb_format_validate(&g), WB_ERR_INVALID);
    g = f;
    g.out.kind = WB_KIND_F32;
    ck_assert_int_eq(wb_format_validate(&g), WB_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "bad value 'f32' for out"));
    g = f;
    g.a.kind = WB_KIND_INT; /* a=s16 is not a type */
    ck_assert_int_eq(wb_format_validate(&g), WB_ERR_INVALID);
    ck_assert_int_eq(wb_format_validate(NULL), WB_ERR_INVALID);
    ck_assert_int_eq(wb_format_validate(&f), WB_OK);
}
END_TEST

START_TEST(print_buffer)
{
    wb_format f;
    char full[256], small[10];
    ck_assert_int_eq(wb_format_parse("w4a16", &f), WB_OK);
    int n = wb_format_print(&f, full, sizeof full);
    ck_assert_int_eq(wb_format_print(&f, small, sizeof small), n);
    ck_assert_int_eq(wb_format_print(&f, NULL, 0), n);
    ck_assert_int_eq((int)strlen(small), 9);
    ck_assert(!strncmp(full, small, 9));
}
END_TEST

static void bad_shape(const char *spec, int64_t m, int64_t n, int64_t k, const char *fragment)
{
    wb_format f;
    ck_assert_int_eq(wb_format_parse(spec, &f), WB_OK);
    ck_assert_int_eq(wb_format_check_shape(&f, m, n, k), WB_ERR_INVALID);
    ck_assert_msg(strstr(wb_last_error(), fragment), "'%s' lacks '%s'", wb_last_error(), fragment);
}

START_TEST(shapes)
{
    wb_format f;
    ck_assert_int_eq(wb_format_parse("fp8-block", &f), WB_OK);
    ck_assert_int_eq(wb_format_check_shape(&f, 1, 128, 128), WB_OK);
    ck_assert_int_eq(wb_format_check_shape(&f, 7, 256, 4096), WB_OK);
    ck_assert_int_eq(wb_format_parse("w=int4", &f), WB_OK);
    ck_assert_int_eq(wb_format_check_shape(&f, 1, 1, 1), WB_OK);
    bad_shape("w4a16", 1, 64, 100, "K=100 is not a multiple of g=128");
    bad_shape("fp8-block", 1, 100, 128, "N=100 is not a multiple of gn=128");
    bad_shape("fp8,ag=64", 1, 64, 96, "K=96 is not a multiple of ag=64");
    bad_shape("w4a16", 0, 64, 128, "every dimension must be >= 1");
    bad_shape("w4a16", 1, 0, 128, "N=0");
    bad_shape("w4a16", 1, 64, -128, "K=-128");
}
END_TEST

START_TEST(user_tables)
{
    static const float t[16] = {-8, -5.5f, -3.25f, -2, -1.5f, -1, -0.5f, -0.125f, 0, 0.25f, 0.75f, 1, 2, 3.5f,
                                6, 0.1f};
    wb_format f, g;
    char buf[512], again[512];
    ck_assert_int_eq(wb_format_parse("w4a16", &f), WB_OK);
    ck_assert_int_eq(wb_format_set_table(&f, t), WB_OK);
    ck_assert_int_eq(f.w.kind, WB_KIND_TABLE);
    ck_assert(wb_format_weight_value(&f, 15) == (double)0.1f);
    ck_assert(isnan(wb_format_weight_value(&f, 16)));
    wb_format_print(&f, buf, sizeof buf);
    ck_assert_ptr_nonnull(strstr(buf, ",w=lut4:-8:-5.5:-3.25:-2:-1.5:-1:-0.5:-0.125:0:0.25:0.75:1:2:3.5:6:0.100000001,"));
    ck_assert_int_eq(wb_format_parse(buf, &g), WB_OK); /* the canonical form parses back to the same floats */
    ck_assert_mem_eq(g.table, t, sizeof t);
    wb_format_print(&g, again, sizeof again);
    ck_assert_str_eq(buf, again);
    ck_assert(wb_format_weight_value(&g, 3) == -2.0);
    ck_assert_int_eq(wb_format_parse("a=f16,w=lut4:1:2", &g), WB_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "lut4 needs 16 values"));
    ck_assert_int_eq(wb_format_parse("a=f16,w=lut4:1:2:3:4:5:6:7:8:9:10:11:12:13:14:15:16:17", &g), WB_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "exactly 16 values"));
    ck_assert_int_eq(wb_format_parse("a=f16,w=lut4:1:2:3:4:5:6:7:8:9:10:11:12:13:14:15:nan", &g), WB_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "value 15 is not a finite number"));
    float bad[16] = {0};
    bad[4] = INFINITY;
    ck_assert_int_eq(wb_format_set_table(&f, bad), WB_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(wb_last_error(), "value 4 is not finite"));
    ck_assert_int_eq(wb_format_parse("a=bf16,w=nf4,g=64", &g), WB_OK);
    ck_assert(wb_format_weight_value(&g, 0) == -1.0 && wb_format_weight_value(&g, 15) == 1.0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("format");
    TCase *tc = tcase_create("format");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, presets);
    tcase_add_test(tc, defaults_and_overrides);
    tcase_add_test(tc, random_specs);
    tcase_add_test(tc, rejections);
    tcase_add_test(tc, validate_hand_filled);
    tcase_add_test(tc, print_buffer);
    tcase_add_test(tc, shapes);
    tcase_add_test(tc, user_tables);
    suite_add_tcase(s, tc);
    return wbt_run(s);
}
