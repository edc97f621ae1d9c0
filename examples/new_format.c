/* A format no preset names, described in a few lines of C: 7-bit e3m3 weights (sign, 3 exponent bits,
 * 3 mantissa bits), e5m2 scales in groups of 64, bf16 activations and output. No kernel was written for
 * it: warble derives the dequant from the description. This program prints the canonical spec, emits
 * the PTX for sm_90a and, on a GPU, runs it against the float64 reference.
 *
 *   cc new_format.c $(pkg-config --cflags --libs warble) -o new_format && ./new_format */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <warble.h>

int main(void)
{
    wb_format f = {
        .a = {WB_KIND_BF16, 16, 0, 0},
        .w = {WB_KIND_FLOAT, 7, 3, 3},  /* e3m3 */
        .ws = {WB_KIND_FLOAT, 8, 5, 2}, /* e5m2 */
        .g = 64, .gn = 1,
        .out = {WB_KIND_BF16, 16, 0, 0},
        .as = {WB_KIND_F32, 32, 0, 0}, .acc = {WB_KIND_F32, 32, 0, 0},
    };
    char spec[256];
    if (wb_format_validate(&f) != WB_OK) {
        fprintf(stderr, "new_format: %s\n", wb_last_error());
        return 2;
    }
    wb_format_print(&f, spec, sizeof spec);
    printf("format: %s\n", spec);

    int64_t m = 9, n = 256, k = 512;
    wb_config c = {0};
    char *ptx = NULL;
    if (wb_config_choose(&f, WB_ARCH_SM90A, m, n, k, &c) || wb_kernel_ptx(&f, WB_ARCH_SM90A, &c, WB_EMIT_ANNOTATE, &ptx)) {
        fprintf(stderr, "new_format: %s\n", wb_last_error());
        return 1;
    }
    const char *rule = strstr(ptx, "dequant rule:");
    printf("sm_90a PTX: %zu bytes; %.*s\n", strlen(ptx), rule ? (int)strcspn(rule, "\n") : 0, rule ? rule : "");
    free(ptx);

    /* random canonical data: codes one per byte, e5m2 scale codes, bf16 activations */
    unsigned seed = 7;
    uint8_t *w = malloc((size_t)(n * k)), *scale = malloc((size_t)(n * k / 64));
    uint16_t *a = malloc((size_t)(m * k) * 2), *out = malloc((size_t)(m * n) * 2);
    double *ref = malloc((size_t)(m * n) * sizeof *ref);
    for (int64_t i = 0; i < n * k; i++)
        w[i] = (uint8_t)(rand_r(&seed) & 0x7f);
    for (int64_t i = 0; i < n * k / 64; i++)
        scale[i] = (uint8_t)wb_type_encode(f.ws, 0.01 + 0.01 * (rand_r(&seed) % 100) / 100.0);
    for (int64_t i = 0; i < m * k; i++)
        a[i] = wb_bf16_from_double((rand_r(&seed) % 2001) / 1000.0 - 1.0);
    wb_host_weights hw = {.w = w, .w_scale = scale};
    wb_host_acts hx = {.a = a};

    wb_gpu *gpu = NULL;
    int rc = 0;
    if (wb_gpu_create(0, &gpu) != WB_OK) {
        printf("no GPU (%s): PTX only\n", wb_last_error());
    } else {
        wb_layer *layer = NULL;
        wb_devptr da = 0, dout = 0;
        rc = 1;
        if (wb_layer_create(gpu, &f, n, k, &hw, &layer) || wb_gpu_alloc(gpu, (size_t)(m * k) * 2, &da) ||
            wb_gpu_alloc(gpu, (size_t)(m * n) * 2, &dout) || wb_gpu_upload(gpu, da, a, (size_t)(m * k) * 2) ||
            wb_layer_gemm(layer, m, da, dout, NULL) || wb_gpu_sync(gpu) ||
            wb_gpu_download(gpu, out, dout, (size_t)(m * n) * 2) || wb_reference_gemm(&f, m, n, k, &hx, &hw, ref)) {
            fprintf(stderr, "new_format: %s\n", wb_last_error());
        } else {
            double num = 0, den = 0;
            for (int64_t i = 0; i < m * n; i++) {
                double d = wb_bf16_to_double(out[i]) - ref[i];
                num += d * d;
                den += ref[i] * ref[i];
            }
            double err = sqrt(num / den);
            printf("%s: relative error %.2e against float64 (bound 8e-3)\n", wb_gpu_name(gpu), err);
            rc = err <= 8e-3 ? 0 : 1;
        }
        wb_gpu_free(gpu, da);
        wb_gpu_free(gpu, dout);
        wb_layer_destroy(layer);
        wb_gpu_destroy(gpu);
    }
    free(w), free(scale), free(a), free(out), free(ref);
    return rc;
}
