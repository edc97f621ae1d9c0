/* Weight packing: canonical N x K codes, scales and zeros -> the kernel layout of lower/layout.h.
 *
 * Codes: signed intB becomes its biased unsigned form (code ^ 2^(B-1)), so the kernel subtracts one
 * constant; small floats and unsigned codes stay as they are. Each lane's 32 codes of a k64 chunk go
 * into bit planes (lower/codes.h). Scales of any type, any N block (gn) and the tensor scale (wgs) are
 * folded here into one value per (channel, group) in the compute type T, so the kernel sees one scale
 * layout for every format. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lower/codes.h"
#include "lower/isa.h"
#include "lower/layout.h"
#include "lower/lower.h"
#include "lower/target.h"

static uint16_t to_compute(wb_type t, double v)
{
    return t.kind == WB_KIND_BF16 ? wb_bf16_from_double(v) : wb_f16_from_double(v);
}

static double from_compute(wb_type t, uint16_t h)
{
    return t.kind == WB_KIND_BF16 ? wb_bf16_to_double(h) : wb_f16_to_double(h);
}

static double read_elem(wb_type t, const void *base, int64_t i)
{
    int bytes = wb_type_file_bytes(t);
    const uint8_t *p = (const uint8_t *)base + i * bytes;
    uint32_t code = 0;
    memcpy(&code, p, (size_t)bytes); /* little-endian host */
    return wb_type_decode(t, code);
}

/* Lane and plane-independent coordinates of code (r, kk) of a strip and k64 chunk. */
static void code_coords(int r, int kk, int *lane, int *step, int *reg, int *half)
{
    int kin = kk % 16;
    *step = kk / 16;
    *reg = (kin >= 8) * 2 + (r >= 8);
    *half = kin & 1;
    *lane = (r % 8) * 4 + (kin % 8) / 2;
}

static wb_status check_pack_args(const wb_format *f, int64_t n, int64_t k, const wb_host_weights *w)
{
    if (!f || !w || !w->w || !w->w_scale)
        return wb_fail(WB_ERR_INVALID, "wb_pack_weights: codes and scales are required");
    if (f->w.bits < 1 || f->w.bits > 8 || n % 16 || k % WB_KW)
        return wb_fail(WB_ERR_UNSUPPORTED, "wb_pack_weights: 1- to 8-bit codes, N a multiple of 16, K of 64");
    wb_status s = wb_format_check_shape(f, 1, n, k);
    if (s)
        return s;
    if ((f->zp != WB_ZP_NONE) != (w->w_zero != NULL))
        return wb_fail(WB_ERR_INVALID, "wb_pack_weights: zero points are given iff zp is int or fp");
    if ((f->bias != 0) != (w->bias != NULL))
        return wb_fail(WB_ERR_INVALID, "wb_pack_weights: a bias is given iff bias=1");
    if ((f->wgs != 0) != (w->w_global != NULL))
        return wb_fail(WB_ERR_INVALID, "wb_pack_weights: a tensor scale is given iff wgs=1");
    return WB_OK;
}

/* A code the kernel cannot represent as a finite value (e4m3 NaN, e5m2 infinities and NaN). */
static int finite_code(wb_type t, uint8_t code) { return isfinite(wb_type_decode(t, code)); }

static wb_status pack_codes(const wb_format *f, int64_t n, int64_t k, const uint8_t *codes, uint32_t *pw)
{
    wb_codes cs;
    wb_codes_get(f->w.bits, &cs);
    int bits = f->w.bits, sign = f->w.kind == WB_KIND_INT ? 1 << (bits - 1) : 0;
    int64_t chunks = k / WB_KW;
    for (int64_t row = 0; row < n; row++)
        for (int64_t col = 0; col < k; col++) {
            uint8_t code = codes[row * k + col];
            if (code >> bits)
                return wb_fail(WB_ERR_INVALID, "weight code 0x%02x at (%lld, %lld) has bits above the %d low bits",
                               code, (long long)row, (long long)col, bits);
            if (f->w.kind == WB_KIND_FLOAT && !finite_code(f->w, code))
                return wb_fail(WB_ERR_INVALID, "weight code 0x%02x at (%lld, %lld) is not a finite value",
                               code, (long long)row, (long long)col);
            int lane, step, reg, half;
            code_coords((int)(row % 16), (int)(col % WB_KW), &lane, &step, &reg, &half);
            uint32_t u = (uint32_t)(code ^ sign);
            uint32_t *lw = pw + ((row / 16 * chunks + col / WB_KW) * 32 + lane) * bits;
            int swap = wb_code_word_swap(bits, lane);
            for (int p = 0; p < cs.nplanes; p++) {
                const wb_plane *pl = &cs.plane[p];
                int word, bit;
                if (wb_plane_split(pl, step, reg)) { /* bit by bit */
                    for (int i = 0; i < pl->width; i++) {
                        wb_plane_bit(pl, step, reg, i, &word, &bit);
                        lw[word ^ swap] |= (u >> (pl->offset + i) & 1) << (bit + 16 * half);
                    }
                    continue;
                }
                wb_plane_field(pl, step, reg, &word, &bit);
                lw[word ^ swap] |= (u >> pl->offset & ((1u << pl->width) - 1)) << (bit + 16 * half);
            }
        }
    return WB_OK;
}

/* W8A8: where code (r, kk) of a strip and k64 chunk goes in its lane's 8 words (lower/layout.h): the
 * m16n8k32 A fragment of k32 step kk / 32, register (k >= 16) * 2 + (r >= 8), byte k % 4. */
static void w8a8_coords(int r, int kk, int *lane, int *word, int *byte)
{
    int kin = kk % 32;
    *lane = (r % 8) * 4 + (kin % 16) / 4;
    *word = (kk / 32) * 4 + (kin >= 16) * 2 + (r >= 8);
    *byte = kin % 4;
}

/* The u32 word of packed W8A8 codes that holds code (row, col), and the code's bit offset in it. A lane
 * has B words per k64 chunk: with 8-bit codes its 8 A registers; with int4 codes (W4A8) 4 words, word j
 * holding A registers 2j (low nibbles of its bytes) and 2j + 1 (high nibbles), which the kernel widens
 * to s8 in registers. */
static int64_t w8a8_word(const wb_format *f, wb_arch arch, int64_t k, int64_t row, int64_t col, int *shift)
{
    int lane, word, byte, bits = f->w.bits;
    if (wb_w8_smem_operand(f, arch)) { /* strip-major k128 chunks of two swizzled 8-row atoms (layout.h) */
        int r = (int)(row % 16), kk = (int)(col % 128);
        int64_t at = (row / 16 * (k / 128) + col / 128) * 2048 + (r / 8) * 1024 + (r % 8) * 128 +
                     ((kk / 16) ^ (r % 8)) * 16 + kk % 16;
        *shift = 8 * (int)(at % 4);
        return at / 4;
    }
    if (wb_format_w4a4(f) || wb_format_fp4_acts(f)) { /* 4-bit x 4-bit: the m16n8k64 A registers (layout.h) */
        int r = (int)(row % 16), kk = (int)(col % WB_KW);
        *shift = 4 * (kk % 8);
        return ((row / 16 * (k / WB_KW) + col / WB_KW) * 32 + (r % 8) * 4 + (kk % 32) / 8) * 4 + (kk / 32) * 2 +
               (r >= 8);
    }
    w8a8_coords((int)(row % 16), (int)(col % WB_KW), &lane, &word, &byte);
    *shift = 8 * byte + (bits == 4 ? 4 * (word & 1) : 0);
    int64_t lane_word = ((row / 16 * (k / WB_KW) + col / WB_KW) * 32 + lane) * bits;
    return lane_word + (word ^ wb_code_word_swap(bits, lane)) * bits / 8;
}

/* W8A8 codes are the s8 or fp8 bytes themselves (no bias, no planes): the kernel feeds them to the MMA.
 * An fp8 code without a finite value (e4m3 NaN, e5m2 infinities and NaN) is refused, as for W8A16. */
static wb_status pack_codes_w8a8(const wb_format *f, wb_arch arch, int64_t n, int64_t k, const uint8_t *codes,
                                 uint32_t *pw)
{
    for (int64_t row = 0; row < n; row++)
        for (int64_t col = 0; col < k; col++) {
            int shift;
            uint8_t code = codes[row * k + col];
            if (f->w.kind == WB_KIND_FLOAT && !finite_code(f->w, code))
                return wb_fail(WB_ERR_INVALID, "weight code 0x%02x at (%lld, %lld) is not a finite value",
                               code, (long long)row, (long long)col);
            int64_t wi = w8a8_word(f, arch, k, row, col, &shift);
            pw[wi] |= (uint32_t)code << shift;
        }
    return WB_OK;
}

/* W8A8's chan array: the f32 scale of each channel, then (bias=1) the f32 bias of each. With groups
 * (g > 0) the channel scale is 1 and the group scales go to `gs` as [K/g][N] f32, a block of gn
 * channels (fp8-block: 128 x 128) repeated for each of its channels. */
static wb_status pack_chan_w8a8(const wb_format *f, int64_t n, int64_t k, const wb_host_weights *w, float *pc,
                                float *gs)
{
    int64_t groups = f->g ? k / f->g : 0;
    for (int64_t i = 0; i < n; i++) {
        pc[i] = f->g ? 1.0f : (float)read_elem(f->ws, w->w_scale, i);
        for (int64_t gi = 0; gi < groups; gi++) {
            gs[gi * n + i] = (float)read_elem(f->ws, w->w_scale, i / f->gn * groups + gi); /* gn: per block */
            if (!isfinite(gs[gi * n + i]))
                return wb_fail(WB_ERR_INVALID, "scale %g of channel %lld, group %lld is not finite",
                               (double)gs[gi * n + i], (long long)i, (long long)gi);
        }
        if (!isfinite(pc[i]))
            return wb_fail(WB_ERR_INVALID, "scale %g of channel %lld is not finite", (double)pc[i], (long long)i);
    }
    for (int64_t i = 0; f->bias && i < n; i++)
        pc[n + i] = (float)read_elem(f->out, w->bias, i);
    return WB_OK;
}

/* chan holds the weight tensor scale after the biases (wgs=1 with fp4 activations) */
static int packs_wglobal(const wb_format *f) { return f->wgs && wb_format_fp4_acts(f); }

/* The byte sizes of the three buffers (pointers NULL): the same on every target. 8-bit activations:
 * the codes, f32 scales per group, f32 channel scales (and biases). Else: the codes, a record per
 * (strip of 16 channels, group), and the f32 biases, then with fp4 activations the weight tensor
 * scale (wgs=1). */
static void packed_sizes(const wb_format *f, int64_t n, int64_t k, wb_packed *s)
{
    memset(s, 0, sizeof *s);
    if (wb_format_w8a8(f)) {
        s->w_bytes = (size_t)(n * k * f->w.bits / 8);
        s->chan_bytes = (size_t)n * 4 * (f->bias ? 2 : 1);
        s->scale_bytes = f->g ? (size_t)(n * (k / f->g)) * 4 : 0;
        return;
    }
    s->w_bytes = (size_t)(n * k / 8 * f->w.bits);
    s->scale_bytes = (size_t)(n / 16 * wb_layout_groups(f, k) * (f->zp != WB_ZP_NONE ? 64 : 32));
    s->chan_bytes = (size_t)((f->bias ? n : 0) + packs_wglobal(f)) * 4;
}

wb_status wb_packed_sizes(const wb_format *f, int64_t n, int64_t k, wb_packed *sizes)
{
    if (!f || !sizes)
        return wb_fail(WB_ERR_INVALID, "wb_packed_sizes: NULL %s", !f ? "format" : "sizes");
    memset(sizes, 0, sizeof *sizes);
    wb_status s = wb_format_check_shape(f, 1, n, k);
    if (!s)
        packed_sizes(f, n, k, sizes);
    return s;
}

int wb_packed_layout_same(const wb_format *f, wb_arch a, wb_arch b)
{
    return wb_w8_smem_operand(f, a) == wb_w8_smem_operand(f, b) &&
           wb_isa_block_scale_vec(f, a) == wb_isa_block_scale_vec(f, b);
}

static wb_status pack_w8a8(const wb_format *f, wb_arch arch, int64_t n, int64_t k, const wb_host_weights *w,
                           wb_packed *out)
{
    if (wb_w8_smem_operand(f, arch) && k % 128)
        return wb_fail(WB_ERR_UNSUPPORTED, "fp8 weights on %s are packed in k128 chunks (wgmma's shared-memory "
                                           "operand): K must be a multiple of 128 (got %lld)",
                       wb_target_get(arch)->name, (long long)k);
    packed_sizes(f, n, k, out);
    out->w = calloc(1, out->w_bytes);
    out->chan = malloc(out->chan_bytes);
    out->scale = out->scale_bytes ? malloc(out->scale_bytes) : NULL;
    if (!out->w || !out->chan || (out->scale_bytes && !out->scale)) {
        wb_packed_free(out);
        return wb_fail(WB_ERR_NOMEM, "out of memory packing %lld x %lld weights", (long long)n, (long long)k);
    }
    wb_status s = pack_codes_w8a8(f, arch, n, k, w->w, out->w);
    if (!s)
        s = pack_chan_w8a8(f, n, k, w, out->chan, out->scale);
    if (s)
        wb_packed_free(out);
    return s;
}

/* fp4 x fp4 on the block-scaled MMA (wb_isa_block_scale_vec): the codes are the m16n8k64 A registers
 * (as W4A4's); each channel's block scales are the MMA's scale bytes. The scale buffer keeps the size
 * and the (strip, k64 chunk) regions of the 16-bit layout's records, which the kernel streams as it
 * does those: in a region, u32 r (r = 0..15, the strip's channel) holds the chunk's scale codes of
 * channel r, block j in byte j (4 blocks of 16, or 2 of 32 and two zero bytes). The MMA reads them as
 * unsigned (ue4m3, ue8m0): a negative e4m3 scale keeps its magnitude and its sign goes into the sign
 * bit of each code of its block (exact: e2m1 is sign-magnitude). Into buffers of the 16-bit layout's
 * sizes (wb_pack_weights), whose chan array it shares. */
static wb_status pack_block_scaled(const wb_format *f, wb_arch arch, int64_t n, int64_t k,
                                   const wb_host_weights *w, wb_packed *out)
{
    int64_t groups = k / f->g, chunks = k / WB_KW;
    int per_chunk = WB_KW / f->g;
    const uint8_t *codes = w->w, *sc = w->w_scale;
    uint8_t *ps = out->scale;
    uint32_t *pw = out->w;
    for (int64_t row = 0; row < n; row++)
        for (int64_t q = 0; q < groups; q++) {
            uint8_t code = sc[row / f->gn * groups + q];
            if (!isfinite(wb_type_decode(f->ws, code)))
                return wb_fail(WB_ERR_INVALID, "scale code 0x%02x of channel %lld, group %lld is not finite",
                               code, (long long)row, (long long)q);
            int negative = f->ws.kind == WB_KIND_FLOAT && (code & 0x80);
            int64_t chunk = q / per_chunk;
            ps[((row / 16) * chunks + chunk) * per_chunk * 32 + (row % 16) * 4 + q % per_chunk] =
                (uint8_t)(negative ? code & 0x7F : code);
            for (int64_t col = q * f->g; col < (q + 1) * f->g; col++) {
                uint8_t c = codes[row * k + col];
                if (c >> 4)
                    return wb_fail(WB_ERR_INVALID, "weight code 0x%02x at (%lld, %lld) has bits above the 4 low bits",
                                   c, (long long)row, (long long)col);
                int shift;
                int64_t wi = w8a8_word(f, arch, k, row, col, &shift);
                pw[wi] |= (uint32_t)(negative ? c ^ 8 : c) << shift;
            }
        }
    return WB_OK;
}

/* One scale record per (strip, group): T(scale) pairs, then zero pairs. */
static wb_status pack_scales(const wb_format *f, int64_t n, int64_t k, const wb_host_weights *w, uint16_t *ps)
{
    wb_type T = wb_format_compute(f);
    int64_t groups = wb_layout_groups(f, k), cols = f->g ? k / f->g : 1;
    int rec = f->zp != WB_ZP_NONE ? 32 : 16; /* u16 per record */
    double magic = T.kind == WB_KIND_BF16 ? 128.0 : 1024.0;
    /* with fp4 activations the tensor scale multiplies the f32 sums instead (the chan array) */
    double global = f->wgs && !wb_format_fp4_acts(f) ? (double)*w->w_global : 1.0;
    int split8 = T.kind == WB_KIND_BF16 && f->w.bits == 8;
    for (int64_t strip = 0; strip < n / 16; strip++)
        for (int64_t q = 0; q < groups; q++) {
            uint16_t *r = ps + (strip * groups + q) * rec;
            for (int i = 0; i < 16; i++) {
                int64_t row = strip * 16 + i, idx = row / f->gn * cols + q;
                int slot = (i % 8) * 2 + i / 8; /* u32 i%8, low half for rows 0..7 */
                double s = read_elem(f->ws, w->w_scale, idx) * global;
                r[slot] = to_compute(T, s);
                if (!isfinite(from_compute(T, r[slot])))
                    return wb_fail(WB_ERR_INVALID, "scale %g of channel %lld, group %lld is not finite in %s",
                                   s, (long long)row, (long long)q, T.kind == WB_KIND_BF16 ? "bf16" : "f16");
                if (f->zp == WB_ZP_INT) {
                    uint8_t z = ((const uint8_t *)w->w_zero)[idx];
                    if (z >> f->w.bits)
                        return wb_fail(WB_ERR_INVALID, "zero code 0x%02x at %lld has bits above the %d low bits",
                                       z, (long long)idx, f->w.bits);
                    /* bf16 8-bit codes are split in two nibbles that carry the magic themselves */
                    r[16 + slot] = to_compute(T, -(split8 ? 0 : magic) - z);
                } else if (f->zp == WB_ZP_FP) {
                    /* w = (u - z) * s = u * s + c with c = -z * s, rounded once */
                    r[16 + slot] = to_compute(T, -read_elem(f->ws, w->w_zero, idx) * s);
                }
            }
        }
    return WB_OK;
}

wb_status wb_pack_weights(const wb_format *f, wb_arch arch, int64_t n, int64_t k, const wb_host_weights *w,
                          wb_packed *out)
{
    memset(out, 0, sizeof *out);
    wb_status s = check_pack_args(f, n, k, w);
    if (s)
        return s;
    if (wb_format_w8a8(f))
        return pack_w8a8(f, arch, n, k, w, out);
    /* chan: the f32 biases; with fp4 activations then the weight tensor scale (wgs=1) */
    int wglobal = packs_wglobal(f);
    if (wglobal && !isfinite(*w->w_global))
        return wb_fail(WB_ERR_INVALID, "the weight tensor scale %g is not finite", (double)*w->w_global);
    packed_sizes(f, n, k, out);
    out->w = calloc(1, out->w_bytes);
    out->scale = calloc(1, out->scale_bytes);
    out->chan = out->chan_bytes ? malloc(out->chan_bytes) : NULL;
    if (!out->w || !out->scale || (out->chan_bytes && !out->chan)) {
        wb_packed_free(out);
        return wb_fail(WB_ERR_NOMEM, "out of memory packing %lld x %lld weights", (long long)n, (long long)k);
    }
    if (wb_isa_block_scale_vec(f, arch))
        s = pack_block_scaled(f, arch, n, k, w, out);
    else if (!(s = pack_codes(f, n, k, w->w, out->w)))
        s = pack_scales(f, n, k, w, out->scale);
    if (s) {
        wb_packed_free(out);
        return s;
    }
    float *pc = out->chan;
    for (int64_t i = 0; f->bias && i < n; i++)
        pc[i] = (float)read_elem(f->out, w->bias, i);
    if (wglobal)
        pc[f->bias ? n : 0] = *w->w_global;
    return WB_OK;
}

wb_status wb_unpack_codes(const wb_format *f, wb_arch arch, int64_t n, int64_t k, const wb_packed *p, uint8_t *codes)
{
    if (!f || !p || !p->w || !codes || n % 16 || k % WB_KW || f->w.bits < 1 || f->w.bits > 8)
        return wb_fail(WB_ERR_INVALID, "wb_unpack_codes: bad argument");
    wb_codes cs;
    wb_codes_get(f->w.bits, &cs);
    int bits = f->w.bits, sign = f->w.kind == WB_KIND_INT ? 1 << (bits - 1) : 0;
    int64_t chunks = k / WB_KW;
    const uint32_t *pw = p->w;
    int fragment = wb_format_w8a8(f) || wb_isa_block_scale_vec(f, arch); /* codes as MMA A registers */
    for (int64_t row = 0; fragment && row < n; row++)
        for (int64_t col = 0; col < k; col++) {
            int shift;
            int64_t wi = w8a8_word(f, arch, k, row, col, &shift); /* sets shift first */
            codes[row * k + col] = (uint8_t)((pw[wi] >> shift) & ((1u << bits) - 1));
        }
    if (fragment)
        return WB_OK;
    for (int64_t row = 0; row < n; row++)
        for (int64_t col = 0; col < k; col++) {
            int lane, step, reg, half;
            code_coords((int)(row % 16), (int)(col % WB_KW), &lane, &step, &reg, &half);
            const uint32_t *lw = pw + ((row / 16 * chunks + col / WB_KW) * 32 + lane) * bits;
            int swap = wb_code_word_swap(bits, lane);
            uint32_t u = 0;
            for (int q = 0; q < cs.nplanes; q++) {
                const wb_plane *pl = &cs.plane[q];
                int word, bit;
                if (wb_plane_split(pl, step, reg)) { /* bit by bit */
                    for (int i = 0; i < pl->width; i++) {
                        wb_plane_bit(pl, step, reg, i, &word, &bit);
                        u |= (lw[word ^ swap] >> (bit + 16 * half) & 1) << (pl->offset + i);
                    }
                    continue;
                }
                wb_plane_field(pl, step, reg, &word, &bit);
                u |= (lw[word ^ swap] >> (bit + 16 * half) & ((1u << pl->width) - 1)) << pl->offset;
            }
            codes[row * k + col] = (uint8_t)(u ^ (uint32_t)sign);
        }
    return WB_OK;
}

int64_t wb_acts_bytes(const wb_format *f, int64_t m, int64_t k)
{
    if (!f || m < 0 || k < 0)
        return 0;
    if (f->a.kind == WB_KIND_F16 || f->a.kind == WB_KIND_BF16)
        return 2 * m * k;
    return f->a.bits == 4 ? m * ((k + 1) / 2) : m * k;
}

wb_status wb_pack_acts(const wb_format *f, int64_t m, int64_t k, const uint8_t *codes, void *packed)
{
    if (!f || !codes || !packed || m < 1 || k < 1)
        return wb_fail(WB_ERR_INVALID, "wb_pack_acts: bad argument");
    if (f->a.kind == WB_KIND_F16 || f->a.kind == WB_KIND_BF16)
        return wb_fail(WB_ERR_INVALID, "wb_pack_acts: f16/bf16 activations are not codes");
    int bits = f->a.bits;
    if (bits == 4 && k % 2)
        return wb_fail(WB_ERR_INVALID, "wb_pack_acts: 4-bit activations need K even (got %lld)", (long long)k);
    uint8_t *out = packed;
    for (int64_t i = 0; i < m * k; i++) {
        if (bits < 8 && codes[i] >> bits)
            return wb_fail(WB_ERR_INVALID, "activation code 0x%02x at (%lld, %lld) has bits above the %d low bits",
                           codes[i], (long long)(i / k), (long long)(i % k), bits);
        if (bits == 8)
            out[i] = codes[i];
        else if (i % 2 == 0)
            out[i / 2] = codes[i];
        else
            out[i / 2] |= (uint8_t)(codes[i] << 4);
    }
    return WB_OK;
}

void wb_packed_free(wb_packed *p)
{
    if (!p)
        return;
    free(p->w);
    free(p->scale);
    free(p->chan);
    memset(p, 0, sizeof *p);
}
