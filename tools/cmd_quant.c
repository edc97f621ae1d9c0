/* `warble quant`: quantize activations on the host with the reference quantizer
 * (wb_reference_quantize_acts), from an M x K file of f32, f16 or bf16 values into the interchange
 * files that `warble run` reads: --a (codes), --a-scale and, with ags=1, --a-global. */
#include "tools/cli.h"

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

int cmd_quant(int argc, char **argv)
{
    cli_args a;
    wb_format f;
    wb_type xt;
    uint64_t allowed = OPT(O_M) | OPT(O_K) | OPT(O_X) | OPT(O_XTYPE) | OPT(O_A) | OPT(O_ASCALE) | OPT(O_AGLOBAL);
    int rc = cli_parse(argc, argv, allowed, 1, &a);
    if (rc || (rc = cli_parse_spec(a.spec, &f)) || (rc = parse_xtype(a.val[O_XTYPE], &xt)))
        return rc;
    if (!cli_acts_quantized(&f))
        return cli_fail(CLI_USAGE, "quant: the format's activations are not quantized (a=f16 or a=bf16)");
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
