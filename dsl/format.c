/* Format specs (contract section 1): parse "preset,key=val,..." or "key=val,...", fill the defaults,
 * check every rule, print the canonical form, and the presets.
 *
 * Parsing is three steps: apply the preset's items, apply the user's items (a key twice is an
 * error; a user item overrides the preset), fill the defaults that depend on `a`. Then
 * wb_format_validate() checks the filled struct, so one set of rules serves both the parser and
 * callers that fill a wb_format by hand. Spaces around items, keys and values are trimmed.
 */
#include "dsl/common.h"
#include "dsl/tile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { K_A, K_AG, K_AS, K_AGS, K_W, K_WS, K_G, K_GN, K_WGS, K_ZP, K_OUT, K_BIAS, K_ACC, K_COUNT };

/* Keys in canonical order, with the allowed values that error messages quote. */
static const struct { const char *name, *allowed; } keys[K_COUNT] = {
    {"a", "f16, bf16, e4m3, e5m2, s8, s4, e2m1"},
    {"ag", "0 = per token, or a group size N >= 1"},
    {"as", "f32, e4m3, e8m0"},
    {"ags", "0, 1"},
    {"w", "int1..int8, uint1..uint8, eXmY, nf4, lut4:v0:...:v15"},
    {"ws", "f16, bf16, f32, e8m0, e4m3, e5m2"},
    {"g", "0 = per output channel, or a group size N >= 1"},
    {"gn", "1, or a block size N >= 1 with g > 0"},
    {"wgs", "0, 1"},
    {"zp", "none, int, fp"},
    {"out", "f16, bf16"},
    {"bias", "0, 1"},
    {"acc", "f32, f16"},
};

static const struct { const char *name, *spec; } presets[] = {
    {"w4a16", "w=int4,ws=f16,g=128"},
    {"w4a16-zp", "w=uint4,zp=int,g=128"},
    {"gptq-int3", "w=uint3,zp=int,g=128"},
    {"w8a16", "w=int8,g=0"},
    {"fp8", "a=e4m3,w=e4m3,ws=f32,g=0"},
    {"fp8-block", "a=e4m3,ag=128,w=e4m3,ws=f32,g=128,gn=128"},
    {"int8", "a=s8,w=int8,ws=f32,g=0"},
    {"w4a8-fp8", "a=e4m3,w=int4,ws=f32,g=128"},
    {"w4a8-int8", "a=s8,w=int4,ws=f32,g=128"},
    {"w4a4-int4", "a=s4,w=int4,ws=f32,g=0"},
    {"mxfp4", "a=bf16,w=e2m1,ws=e8m0,g=32"},
    {"nvfp4", "a=e2m1,ag=16,as=e4m3,ags=1,w=e2m1,ws=e4m3,g=16,wgs=1"},
    {"nvfp4-a16", "a=bf16,w=e2m1,ws=e4m3,g=16,wgs=1"},
    {"mxint4", "a=bf16,w=int4,ws=e8m0,g=32"},
};

int wb_preset_count(void) { return (int)WB_COUNT(presets); }
const char *wb_preset_name(int i) { return i >= 0 && i < wb_preset_count() ? presets[i].name : NULL; }
const char *wb_preset_spec(int i) { return i >= 0 && i < wb_preset_count() ? presets[i].spec : NULL; }

/* ---- names as specs write them */

static int is_kind(wb_type t, wb_kind k, int bits) { return t.kind == k && (!bits || t.bits == bits); }
static int is_half(wb_type t) { return t.kind == WB_KIND_F16 || t.kind == WB_KIND_BF16; }
static int is_float(wb_type t, int e, int m)
{
    return t.kind == WB_KIND_FLOAT && t.ebits == e && t.mbits == m;
}

const char *wb_format_act_name(wb_type t, char buf[8])
{
    if (is_kind(t, WB_KIND_INT, 8))
        return "s8";
    if (is_kind(t, WB_KIND_INT, 4))
        return "s4";
    return wb_type_name(t, buf);
}

static const char *zp_name(wb_zp z) { return z == WB_ZP_INT ? "int" : z == WB_ZP_FP ? "fp" : "none"; }

static int is_lut(wb_type t) { return t.kind == WB_KIND_TABLE && t.ebits == 1; }

/* w's spelling: a type name, or lut4 with its 16 values (%.9g round-trips a float exactly). */
static const char *weight_name(const wb_format *f, char *buf, size_t size)
{
    if (!is_lut(f->w))
        return size >= 8 ? wb_type_name(f->w, buf) : "";
    int n = snprintf(buf, size, "lut4");
    for (int i = 0; i < 16 && n > 0 && (size_t)n < size; i++)
        n += snprintf(buf + n, size - (size_t)n, ":%.9g", f->table[i]);
    return buf;
}

int wb_format_print(const wb_format *f, char *buf, size_t size)
{
    char b[6][8], w[320];
    return snprintf(buf, size,
                    "a=%s,ag=%d,as=%s,ags=%d,w=%s,ws=%s,g=%d,gn=%d,wgs=%d,zp=%s,out=%s,bias=%d,acc=%s",
                    wb_format_act_name(f->a, b[0]), f->ag, wb_type_name(f->as, b[1]), f->ags,
                    weight_name(f, w, sizeof w), wb_type_name(f->ws, b[3]), f->g, f->gn, f->wgs,
                    zp_name(f->zp), wb_type_name(f->out, b[4]), f->bias, wb_type_name(f->acc, b[5]));
}

wb_status wb_format_set_table(wb_format *f, const float values[16])
{
    if (!f || !values)
        return wb_fail(WB_ERR_INVALID, "wb_format_set_table: NULL argument");
    for (int i = 0; i < 16; i++)
        if (!isfinite(values[i]))
            return wb_fail(WB_ERR_INVALID, "wb_format_set_table: value %d is not finite", i);
    f->w = (wb_type){WB_KIND_TABLE, 4, 1, 0};
    memcpy(f->table, values, sizeof f->table);
    return WB_OK;
}

double wb_format_weight_value(const wb_format *f, uint32_t code)
{
    if (is_lut(f->w))
        return code < 16 ? f->table[code] : NAN;
    return wb_type_decode(f->w, code);
}

/* "lut4:v0:...:v15" -> a user table; WB_OK, or an error naming the problem. */
static wb_status parse_lut(wb_format *f, const char *v)
{
    float t[16];
    const char *p = v + 4;
    for (int i = 0; i < 16; i++) {
        char *end;
        if (*p != ':')
            return wb_fail(WB_ERR_INVALID, "bad value '%.40s...' for w: lut4 needs 16 values, lut4:v0:v1:...:v15", v);
        double d = strtod(p + 1, &end);
        if (end == p + 1 || !isfinite(d) || !isfinite((float)d))
            return wb_fail(WB_ERR_INVALID, "bad value for w: lut4 value %d is not a finite number", i);
        t[i] = (float)d;
        p = end;
    }
    if (*p)
        return wb_fail(WB_ERR_INVALID, "bad value for w: lut4 takes exactly 16 values");
    return wb_format_set_table(f, t);
}

/* ---- validation */

static wb_status bad(int key, const char *value)
{
    return wb_fail(WB_ERR_INVALID, "bad value '%s' for %s (%s)", value, keys[key].name,
                   keys[key].allowed);
}

static wb_status bad_int(int key, int value)
{
    char s[16];
    snprintf(s, sizeof s, "%d", value);
    return bad(key, s);
}

static int act_ok(wb_type t)
{
    return is_half(t) || is_float(t, 4, 3) || is_float(t, 5, 2) || is_float(t, 2, 1) ||
           is_kind(t, WB_KIND_INT, 8) || is_kind(t, WB_KIND_INT, 4);
}

static int weight_ok(wb_type t)
{
    if (t.kind == WB_KIND_INT || t.kind == WB_KIND_UINT)
        return t.bits >= 1 && t.bits <= 8;
    if (t.kind == WB_KIND_FLOAT)
        return t.ebits >= 1 && t.mbits >= 0 && t.ebits + t.mbits <= 7 && t.bits == 1 + t.ebits + t.mbits;
    return is_kind(t, WB_KIND_TABLE, 4) && (t.ebits == 0 || t.ebits == 1);
}

static int wscale_ok(wb_type t)
{
    return is_half(t) || t.kind == WB_KIND_F32 || t.kind == WB_KIND_E8M0 || is_float(t, 4, 3) ||
           is_float(t, 5, 2);
}

static int ascale_ok(wb_type t)
{
    return t.kind == WB_KIND_F32 || t.kind == WB_KIND_E8M0 || is_float(t, 4, 3);
}

static int type_ok(int key, wb_type t)
{
    switch (key) {
    case K_A: return act_ok(t);
    case K_AS: return ascale_ok(t);
    case K_W: return weight_ok(t);
    case K_WS: return wscale_ok(t);
    case K_OUT: return is_half(t);
    case K_ACC: return t.kind == WB_KIND_F32 || t.kind == WB_KIND_F16;
    }
    return 0;
}

/* Each key on its own. */
static wb_status validate_values(const wb_format *f)
{
    char b[8];
    if (!act_ok(f->a))
        return bad(K_A, wb_format_act_name(f->a, b));
    if (f->ag < 0)
        return bad_int(K_AG, f->ag);
    if (!ascale_ok(f->as))
        return bad(K_AS, wb_type_name(f->as, b));
    if (f->ags != 0 && f->ags != 1)
        return bad_int(K_AGS, f->ags);
    if (!weight_ok(f->w))
        return bad(K_W, wb_type_name(f->w, b));
    if (!wscale_ok(f->ws))
        return bad(K_WS, wb_type_name(f->ws, b));
    if (f->g < 0)
        return bad_int(K_G, f->g);
    if (f->gn < 1)
        return bad_int(K_GN, f->gn);
    if (f->wgs != 0 && f->wgs != 1)
        return bad_int(K_WGS, f->wgs);
    if (f->zp != WB_ZP_NONE && f->zp != WB_ZP_INT && f->zp != WB_ZP_FP)
        return bad_int(K_ZP, (int)f->zp);
    if (!type_ok(K_OUT, f->out))
        return bad(K_OUT, wb_type_name(f->out, b));
    if (f->bias != 0 && f->bias != 1)
        return bad_int(K_BIAS, f->bias);
    if (!type_ok(K_ACC, f->acc))
        return bad(K_ACC, wb_type_name(f->acc, b));
    return WB_OK;
}

/* Rules between keys. */
static wb_status validate_combinations(const wb_format *f)
{
    char b[2][8];
    const char *a = wb_format_act_name(f->a, b[0]);
    if (is_half(f->a) && f->ag != 0)
        return wb_fail(WB_ERR_INVALID, "ag=%d is for quantized activations; with a=%s, ag must be 0",
                       f->ag, a);
    if (is_half(f->a) && f->as.kind != WB_KIND_F32)
        return wb_fail(WB_ERR_INVALID, "as=%s is for quantized activations; with a=%s, as must be f32",
                       wb_type_name(f->as, b[1]), a);
    if (is_half(f->a) && f->ags != 0)
        return wb_fail(WB_ERR_INVALID, "ags=1 is for quantized activations; with a=%s, ags must be 0", a);
    if (f->gn != 1 && f->g == 0)
        return wb_fail(WB_ERR_INVALID, "gn=%d needs g > 0 (with g=0, gn must be 1)", f->gn);
    if (f->zp == WB_ZP_INT && f->w.kind != WB_KIND_UINT)
        return wb_fail(WB_ERR_INVALID, "zp=int needs w=uintB (uint1..uint8), not w=%s",
                       wb_type_name(f->w, b[1]));
    if (f->zp == WB_ZP_FP && f->w.kind != WB_KIND_UINT && f->w.kind != WB_KIND_INT)
        return wb_fail(WB_ERR_INVALID, "zp=fp needs w=intB or w=uintB, not w=%s",
                       wb_type_name(f->w, b[1]));
    if (f->zp == WB_ZP_FP && !(is_half(f->ws) || f->ws.kind == WB_KIND_F32))
        return wb_fail(WB_ERR_INVALID, "zp=fp needs ws=f16, bf16 or f32, not ws=%s",
                       wb_type_name(f->ws, b[1]));
    if (f->acc.kind == WB_KIND_F16 && !(f->a.kind == WB_KIND_F16 || is_float(f->a, 4, 3)))
        return wb_fail(WB_ERR_INVALID, "acc=f16 needs a=f16 or a=e4m3, not a=%s (use acc=f32)", a);
    if (f->a.kind == WB_KIND_F16 && f->w.kind == WB_KIND_FLOAT && f->w.ebits > 5)
        return wb_fail(WB_ERR_INVALID, "w=%s with a=f16 needs at most 5 exponent bits (e1..e5), or a=bf16",
                       wb_type_name(f->w, b[1]));
    return WB_OK;
}

wb_status wb_format_validate(const wb_format *f)
{
    if (!f)
        return wb_fail(WB_ERR_INVALID, "wb_format_validate: format is NULL");
    wb_status s = validate_values(f);
    return s ? s : validate_combinations(f);
}

/* ---- parsing */

/* Trim spaces in place; returns the first non-space character. */
static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
        s[--n] = 0;
    return s;
}

/* A plain decimal 0..999999999 (no sign, no spaces); -1 when it is not. */
static int parse_count(const char *s)
{
    if (!*s || strlen(s) > 9)
        return -1;
    int v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        v = v * 10 + (*s - '0');
    }
    return v;
}

static int find_key(const char *name)
{
    for (int i = 0; i < K_COUNT; i++)
        if (!strcmp(keys[i].name, name))
            return i;
    return -1;
}

static wb_status unknown_key(const char *name)
{
    char list[128] = "";
    for (int i = 0; i < K_COUNT; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", keys[i].name);
    return wb_fail(WB_ERR_INVALID, "unknown key '%s' (keys: %s)", name, list);
}

/* Store one value; type values are checked against their key's set later, by validation. */
static wb_status set_value(wb_format *f, int key, const char *v)
{
    wb_type t;
    int n = parse_count(v);
    switch (key) {
    case K_A: case K_AS: case K_W: case K_WS: case K_OUT: case K_ACC: {
        if (key == K_W && !strncmp(v, "lut4", 4))
            return parse_lut(f, v);
        if (wb_type_parse(v, &t))
            return bad(key, v);
        wb_type *dst[K_COUNT] = {[K_A] = &f->a, [K_AS] = &f->as, [K_W] = &f->w,
                                 [K_WS] = &f->ws, [K_OUT] = &f->out, [K_ACC] = &f->acc};
        if (!type_ok(key, t))
            return bad(key, v); /* quote the user's spelling */
        *dst[key] = t;
        return WB_OK;
    }
    case K_ZP:
        if (!strcmp(v, "none"))
            f->zp = WB_ZP_NONE;
        else if (!strcmp(v, "int"))
            f->zp = WB_ZP_INT;
        else if (!strcmp(v, "fp"))
            f->zp = WB_ZP_FP;
        else
            return bad(key, v);
        return WB_OK;
    }
    int lo = key == K_GN ? 1 : 0, hi = key == K_AGS || key == K_WGS || key == K_BIAS ? 1 : 1 << 30;
    if (n < lo || n > hi)
        return bad(key, v);
    int *dst[K_COUNT] = {[K_AG] = &f->ag, [K_AGS] = &f->ags, [K_G] = &f->g, [K_GN] = &f->gn,
                         [K_WGS] = &f->wgs, [K_BIAS] = &f->bias};
    *dst[key] = n;
    return WB_OK;
}

/* Apply the comma-separated items of `list` (modified in place). `seen` marks keys set by this list
 * (a duplicate is an error); `set` accumulates every key set so far. A first item without '=' is a
 * preset when `allow_preset`. */
static wb_status apply_items(wb_format *f, char *list, unsigned *set, int allow_preset);

static wb_status apply_preset(wb_format *f, const char *name, unsigned *set)
{
    for (int i = 0; i < wb_preset_count(); i++)
        if (!strcmp(presets[i].name, name)) {
            char copy[128];
            snprintf(copy, sizeof copy, "%s", presets[i].spec);
            return apply_items(f, copy, set, 0);
        }
    char list[256] = "";
    for (int i = 0; i < wb_preset_count(); i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", presets[i].name);
    return wb_fail(WB_ERR_INVALID, "unknown preset '%s' (presets: %s; or key=value items)", name, list);
}

static wb_status apply_items(wb_format *f, char *list, unsigned *set, int allow_preset)
{
    unsigned seen = 0;
    int first = 1;
    for (char *item = list, *next; item; item = next, first = 0) {
        next = strchr(item, ',');
        if (next)
            *next++ = 0;
        item = trim(item);
        if (!*item)
            return wb_fail(WB_ERR_INVALID, "empty item in spec (items are key=value, separated by commas)");
        char *eq = strchr(item, '=');
        if (!eq) {
            if (first && allow_preset) {
                wb_status s = apply_preset(f, item, set);
                if (s)
                    return s;
                continue;
            }
            return wb_fail(WB_ERR_INVALID, "expected key=value, got '%s' (a preset may only come first)",
                           item);
        }
        *eq = 0;
        char *name = trim(item), *value = trim(eq + 1);
        int key = find_key(name);
        if (key < 0)
            return unknown_key(name);
        if (seen & (1u << key))
            return wb_fail(WB_ERR_INVALID, "duplicate key '%s' in spec", name);
        seen |= 1u << key;
        *set |= 1u << key;
        wb_status s = set_value(f, key, value);
        if (s)
            return s;
    }
    return WB_OK;
}

/* Defaults for every key the spec left out; ws and out follow `a`. */
static void fill_defaults(wb_format *f, unsigned set)
{
    static const wb_type f16 = {WB_KIND_F16, 16, 0, 0}, bf16 = {WB_KIND_BF16, 16, 0, 0},
                         f32 = {WB_KIND_F32, 32, 0, 0};
    if (!(set & (1u << K_A)))
        f->a = f16;
    if (!(set & (1u << K_AS)))
        f->as = f32;
    if (!(set & (1u << K_WS)))
        f->ws = is_half(f->a) ? f->a : f32;
    if (!(set & (1u << K_GN)))
        f->gn = 1;
    if (!(set & (1u << K_OUT)))
        f->out = is_half(f->a) ? f->a : bf16;
    if (!(set & (1u << K_ACC)))
        f->acc = f32;
    /* ag, ags, g, wgs, zp, bias default to 0 / none: the struct starts zeroed */
}

wb_status wb_format_parse(const char *spec, wb_format *out)
{
    if (!spec || !out)
        return wb_fail(WB_ERR_INVALID, "wb_format_parse: spec or out is NULL");
    size_t len = strlen(spec);
    char *copy = malloc(len + 1);
    if (copy)
        memcpy(copy, spec, len + 1);
    if (!copy)
        return wb_fail(WB_ERR_NOMEM, "out of memory parsing a spec");
    wb_format f;
    memset(&f, 0, sizeof f);
    unsigned set = 0;
    wb_status s = *trim(copy) ? apply_items(&f, copy, &set, 1)
                              : wb_fail(WB_ERR_INVALID, "empty spec (a preset or key=value items)");
    free(copy);
    if (s)
        return s;
    if (!(set & (1u << K_W)))
        return wb_fail(WB_ERR_INVALID, "missing key w (%s)", keys[K_W].allowed);
    fill_defaults(&f, set);
    if ((s = wb_format_validate(&f)))
        return s;
    *out = f;
    return WB_OK;
}

/* ---- shapes */

wb_status wb_format_check_shape(const wb_format *f, int64_t m, int64_t n, int64_t k)
{
    if (m < 1 || n < 1 || k < 1)
        return wb_fail(WB_ERR_INVALID, "shape M=%lld N=%lld K=%lld: every dimension must be >= 1",
                       (long long)m, (long long)n, (long long)k);
    if (f->g > 0 && k % f->g)
        return wb_fail(WB_ERR_INVALID, "K=%lld is not a multiple of g=%d", (long long)k, f->g);
    if (f->ag > 0 && k % f->ag)
        return wb_fail(WB_ERR_INVALID, "K=%lld is not a multiple of ag=%d", (long long)k, f->ag);
    if (f->gn > 1 && n % f->gn)
        return wb_fail(WB_ERR_INVALID, "N=%lld is not a multiple of gn=%d", (long long)n, f->gn);
    return WB_OK;
}
