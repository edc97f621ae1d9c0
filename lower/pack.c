/* Weight packing: canonical N x K codes, scales and zeros -> the kernel layout of lower/layout.h.
 * Codes: signed intB becomes its biased unsigned form (code ^ 2^(B-1)), so the kernel subtracts one
 * constant; each lane's u32 holds the 8 codes of its m16n8k16 A fragment, register i's two halves in
 * nibbles i and i+4. Scales and zero offsets are converted to the compute type (exact for f16->f16,
 * bf16->bf16; a cross conversion rounds once to nearest even). */
#include <stdlib.h>
#include <string.h>

#include "lower/layout.h"
#include "lower/lower.h"

static uint16_t to_compute(wb_type t, double v)
{
    return t.kind == WB_KIND_BF16 ? wb_bf16_from_double(v) : wb_f16_from_double(v);
}

static double read_elem(wb_type t, const void *base, int64_t i)
{
    int bytes = wb_type_file_bytes(t);
    const uint8_t *p = (const uint8_t *)base + i * bytes;
    uint32_t code = 0;
    memcpy(&code, p, (size_t)bytes); /* little-endian host */
    return wb_type_decode(t, code);
}

/* Position of code (row r, column kk) of a strip/chunk: lane and nibble inside the lane's 4 u32. */
static void code_slot(int r, int kk, int *lane, int *word, int *nibble)
{
    int step = kk / 16, kin = kk % 16;
    int hi_k = kin >= 8, tig = (kin % 8) / 2, second = kin & 1;
    int hi_row = r >= 8, gid = r % 8;
    *lane = gid * 4 + tig;
    *word = step;
    *nibble = (hi_k * 2 + hi_row) + 4 * second;
}

static wb_status check_pack_args(const wb_format *f, int64_t n, int64_t k, const wb_host_weights *w)
{
    if (!f || !w || !w->w || !w->w_scale)
        return wb_fail(WB_ERR_INVALID, "wb_pack_weights: codes and scales are required");
    if (f->w.bits != 4 || n % 16 || k % WB_KW)
        return wb_fail(WB_ERR_UNSUPPORTED, "wb_pack_weights: 4-bit codes, N a multiple of 16, K of 64");
    if ((f->zp == WB_ZP_INT) != (w->w_zero != NULL))
        return wb_fail(WB_ERR_INVALID, "wb_pack_weights: zero points given iff zp=int");
    if ((f->bias != 0) != (w->bias != NULL))
        return wb_fail(WB_ERR_INVALID, "wb_pack_weights: a bias is given iff bias=1");
    return WB_OK;
}

wb_status wb_pack_weights(const wb_format *f, int64_t n, int64_t k, const wb_host_weights *w, wb_packed *out)
{
    memset(out, 0, sizeof *out);
    wb_status s = check_pack_args(f, n, k, w);
    if (s)
        return s;
    int64_t chunks = k / WB_KW, groups = wb_layout_groups(f, k);
    int rec = f->zp == WB_ZP_INT ? 64 : 32, sign = f->w.kind == WB_KIND_INT ? 8 : 0;
    wb_type T = f->a;
    out->w_bytes = (size_t)(n * k / 2);
    out->scale_bytes = (size_t)(n / 16 * groups * rec);
    out->chan_bytes = f->bias ? (size_t)n * 4 : 0;
    out->w = calloc(1, out->w_bytes);
    out->scale = calloc(1, out->scale_bytes);
    out->chan = out->chan_bytes ? malloc(out->chan_bytes) : NULL;
    if (!out->w || !out->scale || (out->chan_bytes && !out->chan)) {
        wb_packed_free(out);
        return wb_fail(WB_ERR_NOMEM, "out of memory packing %lld x %lld weights", (long long)n, (long long)k);
    }
    uint32_t *pw = out->w;
    for (int64_t row = 0; row < n; row++)
        for (int64_t col = 0; col < k; col++) {
            uint8_t code = w->w[row * k + col];
            if (code > 15) {
                wb_packed_free(out);
                return wb_fail(WB_ERR_INVALID, "weight code 0x%02x at (%lld, %lld) has bits above the 4 low bits",
                               code, (long long)row, (long long)col);
            }
            int lane, word, nib;
            code_slot((int)(row % 16), (int)(col % WB_KW), &lane, &word, &nib);
            int64_t u32 = ((row / 16 * chunks + col / WB_KW) * 32 + lane) * 4 + word;
            pw[u32] |= (uint32_t)((code ^ sign) & 15) << (4 * nib);
        }
    uint16_t *ps = out->scale;
    double magic = T.kind == WB_KIND_BF16 ? 128.0 : 1024.0;
    for (int64_t strip = 0; strip < n / 16; strip++)
        for (int64_t q = 0; q < groups; q++) {
            uint16_t *r = ps + (strip * groups + q) * (rec / 2);
            for (int i = 0; i < 16; i++) {
                int64_t row = strip * 16 + i, idx = row * groups + q;
                int slot = (i % 8) * 2 + i / 8; /* u32 i%8, low half for rows 0..7 */
                r[slot] = to_compute(T, read_elem(f->ws, w->w_scale, idx));
                if (f->zp == WB_ZP_INT) {
                    uint8_t z = ((const uint8_t *)w->w_zero)[idx];
                    if (z > 15) {
                        wb_packed_free(out);
                        return wb_fail(WB_ERR_INVALID, "zero code 0x%02x at %lld has bits above the 4 low bits",
                                       z, (long long)idx);
                    }
                    r[16 + slot] = to_compute(T, -(magic + z));
                }
            }
        }
    float *pc = out->chan;
    for (int64_t i = 0; f->bias && i < n; i++)
        pc[i] = (float)read_elem(f->out, w->bias, i);
    return WB_OK;
}

wb_status wb_unpack_codes(const wb_format *f, int64_t n, int64_t k, const wb_packed *p, uint8_t *codes)
{
    if (!f || !p || !p->w || !codes || n % 16 || k % WB_KW)
        return wb_fail(WB_ERR_INVALID, "wb_unpack_codes: bad argument");
    int64_t chunks = k / WB_KW;
    int sign = f->w.kind == WB_KIND_INT ? 8 : 0;
    const uint32_t *pw = p->w;
    for (int64_t row = 0; row < n; row++)
        for (int64_t col = 0; col < k; col++) {
            int lane, word, nib;
            code_slot((int)(row % 16), (int)(col % WB_KW), &lane, &word, &nib);
            int64_t u32 = ((row / 16 * chunks + col / WB_KW) * 32 + lane) * 4 + word;
            codes[row * k + col] = (uint8_t)(((pw[u32] >> (4 * nib)) & 15) ^ sign);
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
