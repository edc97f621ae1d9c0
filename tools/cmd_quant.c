/* `warble quant`: quantize activations with the reference quantizer (wb_reference_quantize_acts) on the
 * host, from an M x K file of f32, f16 or bf16 values into the interchange files that `warble run`
 * reads: --a (codes), --a-scale and, with ags=1, --a-global. With --device, on the GPU
 * (wb_gpu_quantize_acts: f16/bf16 in), checked byte for byte against the host reference; with --arch
 * alone, the GPU quantizer's PTX for that target. */
#include "tools/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_xtype(const char *name, wb_type *t)
{
    if (!name)
        name = "f32";
    if (wb_type_parse(name, t) != 0 || (t->kind != WB_KIND_F16 && t->kind != WB_KIND_BF16 && t->kind != WB_KIND_F32))
        return cli_fail(CLI_USAGE, "--x-type must be f32, f16 or bf16 (got '%s')", name);
    return 0;
}

/* --arch: the GPU quantizer's PTX on stdout (with a tensor scale, ags=1: its pass first, then the
 * quantizer: two modules, one after the other) */
static int print_ptx(const wb_format *f, wb_type xt, wb_arch arch)
{
    for (int global = !f->ags; global < 2; global++) {
        char *ptx = NULL;
        wb_status s = global ? wb_quant_ptx(f, xt, arch, &ptx) : wb_quant_global_ptx(f, xt, arch, &ptx);
        if (s != WB_OK)
            return cli_lib_fail(s, "quant");
        fputs(ptx, stdout);
        free(ptx);
    }
    return 0;
}

/* --device: quantize on the GPU into codes and scales, and compare them with the host reference's. */
static int on_gpu(const cli_args *a, const wb_format *f, wb_type xt, int64_t m, int64_t k, const void *raw,
                  size_t xbytes, void *codes, size_t cbytes, void *scales, size_t sbytes, float global)
{
    int device, rc = cli_device(a, &device);
    wb_gpu *gpu = NULL;
    wb_devptr dx = 0, dc = 0, ds = 0, dg = 0;
    float gg = -1;
    if (rc || (rc = cli_lib_fail_if(wb_gpu_create(device, &gpu), "wb_gpu_create")))
        return rc;
    /* the GPU writes the kernels' layout (s4 two to a byte): the reference's codes packed the same way */
    size_t pbytes = (size_t)wb_acts_bytes(f, m, k);
    void *gc = malloc(cbytes), *gs = malloc(sbytes), *want = malloc(cbytes);
    if (!gc || !gs || !want) {
        free(gc);
        free(gs);
        free(want);
        wb_gpu_destroy(gpu);
        return cli_fail(CLI_FAILED, "out of host memory for %zu bytes of codes", cbytes);
    }
    wb_status s = f->a.bits == 4 ? wb_pack_acts(f, m, k, codes, want) : WB_OK;
    if (f->a.bits != 4)
        memcpy(want, codes, cbytes);
    if (!s)
        s = wb_gpu_alloc(gpu, xbytes, &dx);
    if (!s)
        s = wb_gpu_alloc(gpu, cbytes, &dc);
    if (!s)
        s = wb_gpu_alloc(gpu, sbytes, &ds);
    if (!s)
        s = wb_gpu_upload(gpu, dx, raw, xbytes);
    if (!s) /* poison: an unwritten byte fails the comparison */
        s = wb_gpu_memset(gpu, dc, 0xA5, cbytes);
    if (!s)
        s = wb_gpu_memset(gpu, ds, 0xFF, sbytes);
    if (!s && f->ags && !(s = wb_gpu_alloc(gpu, 4, &dg))) /* the tensor scale, poisoned */
        s = wb_gpu_memset(gpu, dg, 0xFF, 4);
    if (!s)
        s = f->ags ? wb_gpu_quantize_acts_g(gpu, f, xt, m, k, dx, dc, ds, dg, NULL)
                   : wb_gpu_quantize_acts(gpu, f, xt, m, k, dx, dc, ds, NULL);
    if (!s)
        s = wb_gpu_sync(gpu);
    if (!s)
        s = wb_gpu_download(gpu, gc, dc, cbytes);
    if (!s)
        s = wb_gpu_download(gpu, gs, ds, sbytes);
    if (!s && dg)
        s = wb_gpu_download(gpu, &gg, dg, 4);
    if (s != WB_OK)
        rc = cli_lib_fail(s, "quant --device");
    else if (memcmp(gc, want, pbytes) || memcmp(gs, scales, sbytes) || (f->ags && memcmp(&gg, &global, 4)))
        rc = cli_fail(CLI_FAILED, "quant --device: the GPU's %s differ from the host reference's",
                      memcmp(gc, want, pbytes) ? "codes" : memcmp(gs, scales, sbytes) ? "scales" : "tensor scale");
    else
        fprintf(stderr, "warble: quant --device: %lld x %lld on %s, codes and scales equal to the host reference\n",
                (long long)m, (long long)k, wb_gpu_name(gpu));
    free(gc);
    free(gs);
    free(want);
    if (dx)
        wb_gpu_free(gpu, dx);
    if (dc)
        wb_gpu_free(gpu, dc);
    if (ds)
        wb_gpu_free(gpu, ds);
    if (dg)
        wb_gpu_free(gpu, dg);
    wb_gpu_destroy(gpu);
    return rc;
}

int cmd_quant(int argc, char **argv)
{
    cli_args a;
    wb_format f;
    wb_type xt;
    uint64_t allowed = OPT(O_M) | OPT(O_K) | OPT(O_X) | OPT(O_XTYPE) | OPT(O_A) | OPT(O_ASCALE) | OPT(O_AGLOBAL) |
                       OPT(O_ARCH) | OPT(O_DEVICE);
    int rc = cli_parse(argc, argv, allowed, 1, &a);
    if (rc)
        return rc;
    /* --x-type defaults to f32 for files, f16 for the GPU quantizer's PTX */
    const char *xname = a.val[O_XTYPE] ? a.val[O_XTYPE] : cli_has(&a, O_ARCH) ? "f16" : NULL;
    if ((rc = cli_parse_spec(a.spec, &f)) || (rc = parse_xtype(xname, &xt)))
        return rc;
    if (!cli_acts_quantized(&f))
        return cli_fail(CLI_USAGE, "quant: the format's activations are not quantized (a=f16 or a=bf16)");
    if (cli_has(&a, O_ARCH)) {
        if (a.nm || a.k || a.val[O_X] || a.val[O_A] || a.val[O_ASCALE] || cli_has(&a, O_DEVICE))
            return cli_fail(CLI_USAGE, "quant --arch prints the GPU quantizer's PTX: it takes only SPEC and --x-type");
        return print_ptx(&f, xt, a.arch);
    }
    if (cli_has(&a, O_DEVICE) && xt.kind == WB_KIND_F32)
        return cli_fail(CLI_USAGE, "quant --device reads f16 or bf16 activations (--x-type f16 or bf16)");
    if (a.nm != 1 || !a.k || !a.val[O_X] || !a.val[O_A] || !a.val[O_ASCALE])
        return cli_fail(CLI_USAGE, "quant: --m (one value), --k, --x, --a and --a-scale are required");
    if (!f.ags != !a.val[O_AGLOBAL])
        return cli_fail(CLI_USAGE, f.ags ? "quant: the format has ags=1: --a-global is required"
                                         : "quant: --a-global is not used by this format (it has ags=0)");
    int64_t m = a.m[0], k = a.k;
    if (f.ag && k % f.ag)
        return cli_fail(CLI_USAGE, "quant: K=%lld is not a multiple of ag=%d", (long long)k, f.ag);
    cli_layout l;
    cli_file_layout(&f, m, 16, k, &l);
    size_t count = (size_t)m * (size_t)k, xbytes = count * (size_t)wb_type_file_bytes(xt);
    void *raw = NULL, *codes = malloc(l.bytes[F_A]), *scales = malloc(l.bytes[F_ASCALE]);
    float *x = malloc(count * sizeof *x), global = 1;
    if (!codes || !scales || !x)
        rc = cli_fail(CLI_FAILED, "out of host memory for %lld x %lld activations", (long long)m, (long long)k);
    else if (!(rc = cli_read_file("--x", a.val[O_X], xbytes, 0, &raw))) {
        for (size_t i = 0; i < count; i++)
            x[i] = (float)cli_get_value(xt, raw, i);
        wb_status s = wb_reference_quantize_acts(&f, m, k, x, codes, scales, &global);
        if (s != WB_OK)
            rc = cli_lib_fail(s, "quant");
        else if (cli_has(&a, O_DEVICE) &&
                 (rc = on_gpu(&a, &f, xt, m, k, raw, xbytes, codes, l.bytes[F_A], scales, l.bytes[F_ASCALE], global)))
            ;
        else if (!(rc = cli_write_file("--a", a.val[O_A], codes, l.bytes[F_A])) &&
                 !(rc = cli_write_file("--a-scale", a.val[O_ASCALE], scales, l.bytes[F_ASCALE])) && f.ags)
            rc = cli_write_file("--a-global", a.val[O_AGLOBAL], &global, sizeof global);
    }
    free(raw);
    free(codes);
    free(scales);
    free(x);
    return rc;
}
