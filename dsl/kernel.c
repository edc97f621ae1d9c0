/* The tile-IR builder: append ops with a sticky first error, validate, print. */
#include "dsl/tile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const op_names[WB_TOP_COUNT] = {
#define X(name, str, nargs, doc) str,
#include "dsl/ops.def"
#undef X
};
static const int op_nargs[WB_TOP_COUNT] = {
#define X(name, str, nargs, doc) nargs,
#include "dsl/ops.def"
#undef X
};
static const char *const operand_names[] = {"A", "W", "SCALE", "ASCALE"};

wb_kernel *wb_kernel_create(const wb_format *f, const wb_config *cfg)
{
    wb_arena *a = wb_arena_create();
    wb_kernel *k = a ? wb_arena_alloc(a, sizeof *k) : NULL;
    if (!k) {
        wb_arena_destroy(a);
        return NULL;
    }
    k->arena = a;
    k->fmt = *f;
    k->cfg = *cfg;
    return k;
}

void wb_kernel_destroy(wb_kernel *k)
{
    if (k)
        wb_arena_destroy(k->arena);
}

static void set_error(wb_kernel *k, const char *call, const char *what)
{
    if (!k->error[0])
        snprintf(k->error, sizeof k->error, "%s: %s", call, what);
}

static wb_tile_op *append(wb_kernel *k, wb_top op, const char *call)
{
    if (k->error[0])
        return NULL;
    if (k->nops == k->cap) {
        int cap = k->cap ? k->cap * 2 : 32;
        wb_tile_op *ops = wb_arena_alloc(k->arena, (size_t)cap * sizeof *ops);
        if (!ops) {
            set_error(k, call, "out of memory");
            return NULL;
        }
        if (k->ops)
            memcpy(ops, k->ops, (size_t)k->nops * sizeof *ops);
        k->ops = ops;
        k->cap = cap;
    }
    wb_tile_op *o = &k->ops[k->nops++];
    memset(o, 0, sizeof *o);
    o->op = op;
    o->result = -1;
    o->args[0] = o->args[1] = o->args[2] = o->args[3] = o->args[4] = -1;
    return o;
}

static const wb_tile_op *def_of(const wb_kernel *k, int value)
{
    for (int i = 0; i < k->nops; i++)
        if (k->ops[i].result == value)
            return &k->ops[i];
    return NULL;
}

static int expect(wb_kernel *k, const char *call, int value, wb_top op)
{
    const wb_tile_op *d = value >= 0 ? def_of(k, value) : NULL;
    if (!d || d->op != op) {
        char msg[96];
        snprintf(msg, sizeof msg, "operand %%%d is not the result of %s", value, op_names[op]);
        set_error(k, call, msg);
        return 0;
    }
    return 1;
}

int wb_load_tile(wb_kernel *k, wb_operand operand, int stages)
{
    if (stages < 1 || stages > 8) {
        set_error(k, "wb_load_tile", "stages must be 1..8");
        return -1;
    }
    if (k->depth) {
        set_error(k, "wb_load_tile", "tiles are declared before the K loop");
        return -1;
    }
    wb_tile_op *o = append(k, WB_TOP_LOAD_TILE, "wb_load_tile");
    if (!o)
        return -1;
    o->operand = operand;
    o->stages = stages;
    return o->result = k->nvalues++;
}

void wb_kloop(wb_kernel *k)
{
    if (k->depth) {
        set_error(k, "wb_kloop", "K loops do not nest");
        return;
    }
    if (append(k, WB_TOP_KLOOP, "wb_kloop"))
        k->depth++;
}

int wb_load_frag(wb_kernel *k, int tile)
{
    if (!k->depth) {
        set_error(k, "wb_load_frag", "fragments are loaded inside the K loop");
        return -1;
    }
    const wb_tile_op *d = tile >= 0 ? def_of(k, tile) : NULL;
    if (!d || d->op != WB_TOP_DEQUANT_TILE) {
        if (!expect(k, "wb_load_frag", tile, WB_TOP_LOAD_TILE))
            return -1;
    }
    wb_tile_op *o = append(k, WB_TOP_LOAD_FRAG, "wb_load_frag");
    if (!o)
        return -1;
    o->args[0] = tile;
    o->operand = def_of(k, tile)->operand;
    return o->result = k->nvalues++;
}

static int dequant(wb_kernel *k, const char *call, int codes, int scales, int unscaled)
{
    if (!expect(k, call, codes, WB_TOP_LOAD_FRAG) || (scales >= 0 && !expect(k, call, scales, WB_TOP_LOAD_FRAG)))
        return -1;
    if (def_of(k, codes)->operand != WB_OPERAND_W ||
        (scales >= 0 && def_of(k, scales)->operand != WB_OPERAND_SCALE)) {
        set_error(k, call, "codes must be a W fragment, scales a SCALE fragment");
        return -1;
    }
    if (unscaled && k->fmt.zp == WB_ZP_FP) {
        set_error(k, call, "a float zero point (zp=fp) is added after scaling: dequant with the scales");
        return -1;
    }
    wb_tile_op *o = append(k, WB_TOP_DEQUANT, call);
    if (!o)
        return -1;
    o->args[0] = codes;
    o->args[1] = scales;
    o->unscaled = unscaled;
    return o->result = k->nvalues++;
}

int wb_dequant(wb_kernel *k, int codes, int scales) { return dequant(k, "wb_dequant", codes, scales, 0); }

int wb_dequant_tile(wb_kernel *k, int codes, int scales)
{
    const char *call = "wb_dequant_tile";
    if (!k->depth) {
        set_error(k, call, "tiles are dequantized inside the K loop");
        return -1;
    }
    if (!expect(k, call, codes, WB_TOP_LOAD_TILE) || !expect(k, call, scales, WB_TOP_LOAD_TILE))
        return -1;
    if (def_of(k, codes)->operand != WB_OPERAND_A || def_of(k, scales)->operand != WB_OPERAND_ASCALE ||
        !wb_format_fp4_acts(&k->fmt)) {
        set_error(k, call, "dequantizes the A tile of fp4 activations (a=e2m1) with its ASCALE tile");
        return -1;
    }
    wb_tile_op *o = append(k, WB_TOP_DEQUANT_TILE, call);
    if (!o)
        return -1;
    o->args[0] = codes;
    o->args[1] = scales;
    o->operand = WB_OPERAND_A;
    return o->result = k->nvalues++;
}

int wb_dequant_unscaled(wb_kernel *k, int codes, int records)
{
    return dequant(k, "wb_dequant_unscaled", codes, records, 1);
}

int wb_acc(wb_kernel *k)
{
    wb_tile_op *o = append(k, WB_TOP_ACC, "wb_acc");
    return o ? (o->result = k->nvalues++) : -1;
}

static void mma(wb_kernel *k, const char *call, int acc, int weights, int acts, int scales)
{
    /* W8A8 multiplies the code fragment itself; every other format its dequantized weights */
    wb_top wop = wb_format_w8a8(&k->fmt) ? WB_TOP_LOAD_FRAG : WB_TOP_DEQUANT;
    if (!expect(k, call, acc, WB_TOP_ACC) || !expect(k, call, weights, wop) ||
        !expect(k, call, acts, WB_TOP_LOAD_FRAG) || (scales >= 0 && !expect(k, call, scales, WB_TOP_LOAD_FRAG)))
        return;
    if (def_of(k, acts)->operand != WB_OPERAND_A) {
        set_error(k, call, "B must be an activation fragment");
        return;
    }
    if (wop == WB_TOP_DEQUANT && def_of(k, def_of(k, weights)->args[0])->operand != WB_OPERAND_W) {
        set_error(k, call, "A must be dequantized weights");
        return;
    }
    if (wop == WB_TOP_LOAD_FRAG && (def_of(k, weights)->operand != WB_OPERAND_W || scales >= 0)) {
        set_error(k, call, "W8A8 takes the W code fragment, unscaled (the scales come after K)");
        return;
    }
    if (wop == WB_TOP_DEQUANT && def_of(k, weights)->unscaled != (scales >= 0)) {
        set_error(k, call, scales >= 0 ? "wb_mma_scaled takes unscaled weights (wb_dequant_unscaled)"
                                       : "unscaled weights need their scale: use wb_mma_scaled");
        return;
    }
    if (scales >= 0 && (def_of(k, scales)->operand != WB_OPERAND_SCALE ||
                        (k->fmt.g % WB_SLICE_K && k->fmt.g != WB_SLICE_K / 2))) {
        set_error(k, call, "scaled f32 products need a SCALE fragment and g = 0, 32 or a multiple of 64");
        return;
    }
    wb_tile_op *o = append(k, scales >= 0 ? WB_TOP_MMA_SCALED : WB_TOP_MMA, call);
    if (o) {
        o->args[0] = acc;
        o->args[1] = weights;
        o->args[2] = acts;
        o->args[3] = scales;
    }
}

void wb_mma(wb_kernel *k, int acc, int weights, int acts) { mma(k, "wb_mma", acc, weights, acts, -1); }

void wb_mma_scaled(wb_kernel *k, int acc, int weights, int acts, int scales)
{
    if (scales < 0) {
        set_error(k, "wb_mma_scaled", "needs a scale fragment");
        return;
    }
    mma(k, "wb_mma_scaled", acc, weights, acts, scales);
}

void wb_mma_block(wb_kernel *k, int acc, int weights, int wscales, int acts, int ascales)
{
    const char *call = "wb_mma_block";
    if (!k->block_scale) {
        set_error(k, call, "the target's MMA does not apply this format's block scales");
        return;
    }
    if (!expect(k, call, acc, WB_TOP_ACC) || !expect(k, call, weights, WB_TOP_LOAD_FRAG) ||
        !expect(k, call, wscales, WB_TOP_LOAD_FRAG) || !expect(k, call, acts, WB_TOP_LOAD_FRAG) ||
        !expect(k, call, ascales, WB_TOP_LOAD_FRAG))
        return;
    if (def_of(k, weights)->operand != WB_OPERAND_W || def_of(k, wscales)->operand != WB_OPERAND_SCALE ||
        def_of(k, acts)->operand != WB_OPERAND_A || def_of(k, ascales)->operand != WB_OPERAND_ASCALE) {
        set_error(k, call, "takes the W, SCALE, A and ASCALE fragments, in that order");
        return;
    }
    wb_tile_op *o = append(k, WB_TOP_MMA_BLOCK, call);
    if (o) {
        o->args[0] = acc;
        o->args[1] = weights;
        o->args[2] = wscales;
        o->args[3] = acts;
        o->args[4] = ascales;
    }
}

void wb_kloop_end(wb_kernel *k)
{
    if (!k->depth) {
        set_error(k, "wb_kloop_end", "no open K loop");
        return;
    }
    if (append(k, WB_TOP_KLOOP_END, "wb_kloop_end"))
        k->depth--;
}

void wb_epilogue(wb_kernel *k, int acc)
{
    if (k->depth) {
        set_error(k, "wb_epilogue", "the K loop is still open");
        return;
    }
    if (!expect(k, "wb_epilogue", acc, WB_TOP_ACC))
        return;
    wb_tile_op *o = append(k, WB_TOP_EPILOGUE, "wb_epilogue");
    if (o)
        o->args[0] = acc;
}

wb_status wb_kernel_validate(const wb_kernel *k)
{
    if (k->error[0])
        return wb_fail(WB_ERR_INVALID, "%s", k->error);
    int depth = 0, epilogues = 0;
    for (int i = 0; i < k->nops; i++) {
        const wb_tile_op *o = &k->ops[i];
        depth += o->op == WB_TOP_KLOOP ? 1 : o->op == WB_TOP_KLOOP_END ? -1 : 0;
        if (depth < 0 || depth > 1)
            return wb_fail(WB_ERR_INVALID, "tile IR: unbalanced K loop at op %d", i);
        epilogues += o->op == WB_TOP_EPILOGUE;
        for (int j = 0; j < op_nargs[o->op]; j++) {
            int v = o->args[j];
            if (v < 0)
                continue;
            const wb_tile_op *d = def_of(k, v);
            if (!d || d > o)
                return wb_fail(WB_ERR_INVALID, "tile IR: op %d uses %%%d before its definition", i, v);
        }
    }
    if (depth || epilogues != 1)
        return wb_fail(WB_ERR_INVALID, "tile IR: a kernel has one closed K loop and one epilogue");
    return WB_OK;
}

const char *wb_tile_op_text(wb_kernel *k, const wb_tile_op *o)
{
    char buf[160];
    int n = 0;
    if (o->result >= 0)
        n += snprintf(buf + n, sizeof buf - (size_t)n, "%%%d = ", o->result);
    n += snprintf(buf + n, sizeof buf - (size_t)n, "%s", op_names[o->op]);
    for (int j = 0; j < op_nargs[o->op]; j++)
        if (o->args[j] >= 0)
            n += snprintf(buf + n, sizeof buf - (size_t)n, " %%%d", o->args[j]);
    if (o->op == WB_TOP_LOAD_TILE || o->op == WB_TOP_LOAD_FRAG)
        n += snprintf(buf + n, sizeof buf - (size_t)n, " (%s)", operand_names[o->operand]);
    if (o->op == WB_TOP_LOAD_TILE)
        snprintf(buf + n, sizeof buf - (size_t)n, " stages=%d", o->stages);
    if (o->op == WB_TOP_DEQUANT && o->unscaled)
        snprintf(buf + n, sizeof buf - (size_t)n, " (unscaled)");
    return wb_arena_strdup(k->arena, buf);
}

void wb_kernel_print(wb_kernel *k, wb_buf *out)
{
    for (int i = 0; i < k->nops; i++) {
        const char *t = wb_tile_op_text(k, &k->ops[i]);
        wb_buf_printf(out, "%s%s\n", k->ops[i].op == WB_TOP_LOAD_FRAG || k->ops[i].op == WB_TOP_DEQUANT ||
                                     k->ops[i].op == WB_TOP_MMA ||
                                     k->ops[i].op == WB_TOP_MMA_SCALED ||
                                     k->ops[i].op == WB_TOP_MMA_BLOCK ? "    " : "", t ? t : "?");
    }
}
