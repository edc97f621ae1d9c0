/* Weights packed ahead of time: pack a W4A16 layer once (as a checkpoint converter would), keep its
 * three buffers in a file, read them back and make layers from them with wb_layer_create_packed, no
 * repacking at load time. Two layers share the one packing; each GEMM is checked against the float64
 * reference, and the two outputs must be the same bits.
 *
 *   cc packed_weights.c $(pkg-config --cflags --libs warble) -lm -o packed_weights && ./packed_weights [FILE]
 *
 * Without a GPU it packs for sm_90a, writes and reads the file back, checks the sizes and exits 0. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <warble.h>

static double uniform(unsigned *s) { return (double)(*s = *s * 1664525u + 1013904223u) / 4294967296.0; }

/* The file: the three sizes, then the buffers. */
static int save(const char *path, const wb_packed *p)
{
    FILE *fp = fopen(path, "wb");
    if (!fp)
        return -1;
    size_t sizes[3] = {p->w_bytes, p->scale_bytes, p->chan_bytes};
    const void *bufs[3] = {p->w, p->scale, p->chan};
    int ok = fwrite(sizes, sizeof sizes, 1, fp) == 1;
    for (int i = 0; i < 3 && ok; i++)
        ok = !sizes[i] || fwrite(bufs[i], sizes[i], 1, fp) == 1;
    return fclose(fp) == 0 && ok ? 0 : -1;
}

/* Read a file save wrote, whose sizes must be `want`'s (wb_packed_sizes), into malloc'ed buffers. */
static int load(const char *path, const wb_packed *want, wb_packed *p)
{
    memset(p, 0, sizeof *p);
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return -1;
    size_t sizes[3];
    int ok = fread(sizes, sizeof sizes, 1, fp) == 1 && sizes[0] == want->w_bytes &&
             sizes[1] == want->scale_bytes && sizes[2] == want->chan_bytes;
    void **bufs[3] = {&p->w, &p->scale, &p->chan};
    for (int i = 0; i < 3 && ok; i++)
        if (sizes[i])
            ok = (*bufs[i] = malloc(sizes[i])) && fread(*bufs[i], sizes[i], 1, fp) == 1;
    p->w_bytes = sizes[0], p->scale_bytes = sizes[1], p->chan_bytes = sizes[2];
    fclose(fp);
    return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "packed_weights.bin";
    int64_t m = 7, n = 256, k = 1024;
    wb_format f;
    if (wb_format_parse("w4a16", &f) != WB_OK) {
        fprintf(stderr, "%s\n", wb_last_error());
        return 2;
    }
    /* a layer as a converter would read it: int4 codes one per byte, f16 scales per 128 along K */
    unsigned seed = 7;
    size_t codes = (size_t)(n * k), scales = codes / 128, acts = (size_t)(m * k), outs = (size_t)(m * n);
    uint8_t *w = malloc(codes);
    uint16_t *scale = malloc(scales * 2), *a = malloc(acts * 2), *out[2] = {malloc(outs * 2), malloc(outs * 2)};
    double *ref = malloc(outs * sizeof *ref);
    for (size_t i = 0; i < codes; i++) {
        w[i] = (uint8_t)(uniform(&seed) * 16);
        if (i < scales)
            scale[i] = wb_f16_from_double(0.01 + 0.03 * uniform(&seed));
        if (i < acts)
            a[i] = wb_f16_from_double(uniform(&seed) - 0.5);
    }
    wb_host_weights hw = {.w = w, .w_scale = scale};
    wb_host_acts hx = {.a = a};

    /* pack for the GPU's target (sm_90a without one), save, read back */
    wb_gpu *gpu = NULL;
    int have_gpu = wb_gpu_create(0, &gpu) == WB_OK;
    wb_arch arch = have_gpu ? wb_gpu_arch(gpu) : WB_ARCH_SM90A;
    wb_packed packed, sizes, loaded;
    int rc = 1;
    if (wb_pack_weights(&f, arch, n, k, &hw, &packed) || wb_packed_sizes(&f, n, k, &sizes)) {
        fprintf(stderr, "packed_weights: %s\n", wb_last_error());
        goto done;
    }
    if (save(path, &packed) || load(path, &sizes, &loaded)) {
        fprintf(stderr, "packed_weights: %s: could not write or read back the packed weights\n", path);
        wb_packed_free(&packed);
        goto done;
    }
    wb_packed_free(&packed);
    printf("%s: %zu + %zu + %zu bytes packed for %s\n", path, loaded.w_bytes, loaded.scale_bytes, loaded.chan_bytes,
           wb_arch_name(arch));
    if (!have_gpu) {
        printf("no GPU: packed, saved and read back; the layers need a GPU\n");
        rc = 0;
    } else {
        wb_layer *layer[2] = {NULL, NULL};
        wb_devptr da = 0, dout = 0;
        int failed = wb_gpu_alloc(gpu, acts * 2, &da) || wb_gpu_alloc(gpu, outs * 2, &dout) ||
                     wb_gpu_upload(gpu, da, a, acts * 2) ||
                     wb_reference_gemm(&f, m, n, k, &hx, &hw, ref);
        for (int l = 0; l < 2 && !failed; l++) /* two layers, one packing; the output poisoned (NaN) first */
            failed = wb_layer_create_packed(gpu, &f, arch, n, k, &loaded, &layer[l]) ||
                     wb_gpu_memset(gpu, dout, 0xff, outs * 2) ||
                     wb_layer_gemm(layer[l], m, da, dout, NULL) || wb_gpu_sync(gpu) ||
                     wb_gpu_download(gpu, out[l], dout, outs * 2);
        if (failed) {
            fprintf(stderr, "packed_weights: %s\n", wb_last_error());
        } else {
            double num = 0, den = 0;
            for (size_t i = 0; i < outs; i++) {
                double d = wb_f16_to_double(out[0][i]) - ref[i];
                num += d * d;
                den += ref[i] * ref[i];
            }
            double err = sqrt(num / den);
            int same = !memcmp(out[0], out[1], outs * 2);
            printf("%lld x %lld x %lld on %s from the file: relative error %.2e (bound 1e-3), two layers %s\n",
                   (long long)m, (long long)n, (long long)k, wb_gpu_name(gpu), err, same ? "the same bits" : "DIFFER");
            rc = err <= 1e-3 && same ? 0 : 1;
        }
        wb_gpu_free(gpu, da);
        wb_gpu_free(gpu, dout);
        wb_layer_destroy(layer[0]);
        wb_layer_destroy(layer[1]);
    }
    wb_packed_free(&loaded);
done:
    wb_gpu_destroy(gpu);
    free(w), free(scale), free(a), free(out[0]), free(out[1]), free(ref);
    return rc;
}
