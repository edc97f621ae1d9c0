/* Embedding warble: one W4A16 layer, one GEMM on a stream, checked against the float64 reference.
 *
 *   cc embed_gemm.c $(pkg-config --cflags --libs warble) -lm -o embed_gemm && ./embed_gemm [M N K]
 *
 * Without a GPU it says so and exits 0 after printing the PTX it would run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <warble.h>

static double uniform(unsigned *s) { return (double)(*s = *s * 1664525u + 1013904223u) / 4294967296.0; }

int main(int argc, char **argv)
{
    int64_t m = argc > 3 ? atoll(argv[1]) : 5, n = argc > 3 ? atoll(argv[2]) : 256, k = argc > 3 ? atoll(argv[3]) : 512;
    wb_format f;
    if (wb_format_parse("w4a16", &f) != WB_OK) { /* int4 weights, f16 scales per 128, f16 activations */
        fprintf(stderr, "%s\n", wb_last_error());
        return 2;
    }
    /* canonical host data: codes one per byte, scales (N x K/128) f16, activations M x K f16 */
    unsigned seed = 12345;
    uint8_t *w = malloc((size_t)(n * k));
    uint16_t *scale = malloc((size_t)(n * k / 128) * 2), *a = malloc((size_t)(m * k) * 2), *out = malloc((size_t)(m * n) * 2);
    double *ref = malloc((size_t)(m * n) * sizeof *ref);
    for (int64_t i = 0; i < n * k; i++)
        w[i] = (uint8_t)(uniform(&seed) * 16);
    for (int64_t i = 0; i < n * k / 128; i++)
        scale[i] = wb_f16_from_double(0.02 + 0.02 * uniform(&seed));
    for (int64_t i = 0; i < m * k; i++)
        a[i] = wb_f16_from_double(2 * uniform(&seed) - 1);
    wb_host_weights hw = {.w = w, .w_scale = scale};
    wb_host_acts hx = {.a = a};

    wb_gpu *gpu = NULL;
    if (wb_gpu_create(0, &gpu) != WB_OK) {
        printf("no GPU (%s); the kernel that would run on sm_90a:\n", wb_last_error());
        wb_config c = {0};
        char *ptx = NULL;
        if (wb_config_choose(&f, WB_ARCH_SM90A, m, n, k, &c) == WB_OK && wb_kernel_ptx(&f, WB_ARCH_SM90A, &c, 0, &ptx) == WB_OK)
            printf("%.400s...\n", ptx);
        free(ptx);
        return 0;
    }
    wb_layer *layer = NULL;
    wb_devptr da = 0, dout = 0;
    int rc = 1;
    if (wb_layer_create(gpu, &f, n, k, &hw, &layer) || wb_gpu_alloc(gpu, (size_t)(m * k) * 2, &da) ||
        wb_gpu_alloc(gpu, (size_t)(m * n) * 2, &dout) || wb_gpu_upload(gpu, da, a, (size_t)(m * k) * 2) ||
        wb_layer_gemm(layer, m, da, dout, NULL) || wb_gpu_sync(gpu) ||
        wb_gpu_download(gpu, out, dout, (size_t)(m * n) * 2) || wb_reference_gemm(&f, m, n, k, &hx, &hw, ref)) {
        fprintf(stderr, "embed_gemm: %s\n", wb_last_error());
    } else {
        double num = 0, den = 0;
        for (int64_t i = 0; i < m * n; i++) {
            double d = wb_f16_to_double(out[i]) - ref[i];
            num += d * d;
            den += ref[i] * ref[i];
        }
        double err = sqrt(num / den);
        printf("%lld x %lld x %lld on %s: relative error %.2e (bound 1e-3)\n", (long long)m, (long long)n,
               (long long)k, wb_gpu_name(gpu), err);
        rc = err <= 1e-3 ? 0 : 1;
    }
    wb_gpu_free(gpu, da);
    wb_gpu_free(gpu, dout);
    wb_layer_destroy(layer);
    wb_gpu_destroy(gpu);
    free(w), free(scale), free(a), free(out), free(ref);
    return rc;
}
