/* `warble run`: one GEMM on the GPU from the interchange files of contract section 3. Every file is
 * checked (needed or not, size, high bits of codes) before the GPU is touched, so bad input is exit 2
 * on any machine. */
#include "tools/cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const cli_opt file_opt[F_COUNT] = {
    [F_A] = O_A,         [F_ASCALE] = O_ASCALE, [F_AGLOBAL] = O_AGLOBAL,
    [F_W] = O_W,         [F_WSCALE] = O_WSCALE, [F_WZERO] = O_WZERO,
    [F_WGLOBAL] = O_WGLOBAL, [F_BIAS] = O_BIAS, [F_OUT] = O_OUT,
};

/* Which files the format needs, in words, for the "not used" message. */
static const char *unused_reason(cli_file which)
{
    switch (which) {
    case F_ASCALE: return "activation scales exist only for quantized activations";
    case F_AGLOBAL: return "the format has ags=0";
    case F_WZERO: return "the format has zp=none";
    case F_WGLOBAL: return "the format has wgs=0";
    case F_BIAS: return "the format has bias=0";
    default: return "";
    }
}

static int load_inputs(const cli_args *a, const cli_layout *l, void **buf)
{
    for (int i = 0; i < F_COUNT; i++) {
        const char *path = a->val[file_opt[i]];
        if (!l->bytes[i] && path)
            return cli_fail(CLI_USAGE, "%s is not used by this format (%s)", cli_file_opt[i],
                            unused_reason((cli_file)i));
        if (l->bytes[i] && !path)
            return cli_fail(CLI_USAGE, "missing %s (this format needs %zu bytes of it)", cli_file_opt[i],
                            l->bytes[i]);
    }
    for (int i = 0; i < F_COUNT; i++) {
        if (i == F_OUT || !l->bytes[i])
            continue;
        int rc = cli_read_file(cli_file_opt[i], a->val[file_opt[i]], l->bytes[i], l->code_bits[i], &buf[i]);
        if (rc)
            return rc;
    }
    return 0;
}

typedef struct run_gpu {
    wb_gpu *gpu;
    wb_layer *layer;
    wb_devptr a, a_scale, a_global, out; /* a_scale: quantized activations; a_global: ags=1 */
} run_gpu;

static int run_on_gpu(const cli_args *a, const wb_format *f, const cli_layout *l, void **buf, run_gpu *g)
{
    int64_t m = a->m[0];
    int device, rc = cli_device(a, &device);
    if (rc)
        return rc;
    wb_host_weights hw = {buf[F_W], buf[F_WSCALE], buf[F_WZERO], buf[F_WGLOBAL], buf[F_BIAS]};
    if ((rc = cli_lib_fail_if(wb_gpu_create(device, &g->gpu), "wb_gpu_create")))
        return rc;
    wb_arch arch = wb_gpu_arch(g->gpu);
    wb_config cfg = a->cfg;
    if ((rc = cli_lib_fail_if(wb_config_choose(f, arch, m, a->n, a->k, &cfg), wb_arch_name(arch))) ||
        (rc = cli_lib_fail_if(wb_kernel_check_shape(f, &cfg, m, a->n, a->k), wb_arch_name(arch))) ||
        (rc = cli_lib_fail_if(wb_layer_create(g->gpu, f, a->n, a->k, &hw, &g->layer), "wb_layer_create")))
        return rc;
    if (a->have_cfg && (rc = cli_lib_fail_if(wb_layer_set_config(g->layer, &cfg), "wb_layer_set_config")))
        return rc;
    if ((rc = cli_lib_fail_if(wb_gpu_alloc(g->gpu, l->bytes[F_A], &g->a), "wb_gpu_alloc")) ||
        (rc = cli_lib_fail_if(wb_gpu_alloc(g->gpu, l->bytes[F_OUT], &g->out), "wb_gpu_alloc")) ||
        (rc = cli_lib_fail_if(cli_upload_acts(g->gpu, f, m, a->k, buf[F_A], l->bytes[F_A], g->a), "wb_gpu_upload")))
        return rc;
    /* quantized activations: their scales (and tensor scale) go up too, and the launch is wb_layer_gemm_qg */
    if (cli_acts_quantized(f) &&
        ((rc = cli_lib_fail_if(wb_gpu_alloc(g->gpu, l->bytes[F_ASCALE], &g->a_scale), "wb_gpu_alloc")) ||
         (rc = cli_lib_fail_if(wb_gpu_upload(g->gpu, g->a_scale, buf[F_ASCALE], l->bytes[F_ASCALE]),
                               "wb_gpu_upload")) ||
         (f->ags && ((rc = cli_lib_fail_if(wb_gpu_alloc(g->gpu, 4, &g->a_global), "wb_gpu_alloc")) ||
                     (rc = cli_lib_fail_if(wb_gpu_upload(g->gpu, g->a_global, buf[F_AGLOBAL], 4), "wb_gpu_upload")))) ||
         (rc = cli_lib_fail_if(wb_layer_gemm_qg(g->layer, m, g->a, g->a_scale, g->a_global, g->out, NULL),
                               "wb_layer_gemm_qg"))))
        return rc;
    if ((!cli_acts_quantized(f) &&
         (rc = cli_lib_fail_if(wb_layer_gemm(g->layer, m, g->a, g->out, NULL), "wb_layer_gemm"))) ||
        (rc = cli_lib_fail_if(wb_gpu_sync(g->gpu), "wb_gpu_sync")) ||
        (rc = cli_lib_fail_if(wb_gpu_download(g->gpu, buf[F_OUT], g->out, l->bytes[F_OUT]), "wb_gpu_download")))
        return rc;
    return 0;
}

static int write_output(const char *path, FILE *fp, const void *data, size_t bytes)
{
    size_t put = fwrite(data, 1, bytes, fp);
    int bad = put != bytes;
    bad |= fclose(fp) != 0;
    if (bad)
        return cli_fail(CLI_FAILED, "--out: writing '%s' failed: %s", path, strerror(errno));
    return 0;
}

int cmd_run(int argc, char **argv)
{
    cli_args a;
    wb_format f;
    cli_layout l;
    void *buf[F_COUNT] = {0};
    run_gpu g = {0};
    FILE *out = NULL;
    uint64_t files = 0;
    for (int i = 0; i < F_COUNT; i++)
        files |= OPT(file_opt[i]);
    int rc = cli_parse(argc, argv, CLI_SHAPE_OPTS | CLI_CONFIG_OPTS | OPT(O_DEVICE) | files, 1, &a);
    if (rc || (rc = cli_parse_spec(a.spec, &f)))
        return rc;
    if (!a.nm || !a.n || !a.k)
        return cli_fail(CLI_USAGE, "run: --m, --n and --k are required");
    if (a.nm != 1)
        return cli_fail(CLI_USAGE, "run: --m takes one value");
    wb_status s = wb_format_check_shape(&f, a.m[0], a.n, a.k);
    if (s != WB_OK)
        return cli_lib_fail(s, NULL);
    cli_file_layout(&f, a.m[0], a.n, a.k, &l);
    if ((rc = load_inputs(&a, &l, buf)))
        goto done;
    out = fopen(a.val[O_OUT], "wb");
    if (!out) {
        rc = cli_fail(CLI_USAGE, "--out: cannot create '%s': %s", a.val[O_OUT], strerror(errno));
        goto done;
    }
    buf[F_OUT] = malloc(l.bytes[F_OUT]);
    if (!buf[F_OUT]) {
        rc = cli_fail(CLI_FAILED, "out of host memory (%zu bytes)", l.bytes[F_OUT]);
        goto done;
    }
    if ((rc = run_on_gpu(&a, &f, &l, buf, &g)) == 0) {
        rc = write_output(a.val[O_OUT], out, buf[F_OUT], l.bytes[F_OUT]);
        out = NULL;
    }
done:
    if (out) {
        fclose(out);
        remove(a.val[O_OUT]); /* leave no partial output behind */
    }
    if (g.gpu) {
        if (g.a)
            wb_gpu_free(g.gpu, g.a);
        if (g.a_scale)
            wb_gpu_free(g.gpu, g.a_scale);
        if (g.a_global)
            wb_gpu_free(g.gpu, g.a_global);
        if (g.out)
            wb_gpu_free(g.gpu, g.out);
    }
    wb_layer_destroy(g.layer);
    wb_gpu_destroy(g.gpu);
    for (int i = 0; i < F_COUNT; i++)
        free(buf[i]);
    return rc;
}
