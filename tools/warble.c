/* warble: the command line (contract section 4). This file only dispatches; each subcommand lives in
 * its own cmd_*.c file and uses only the public header. */
#include "tools/cli.h"

#include <string.h>

static const char usage_text[] =
    "usage: warble COMMAND [ARGS]\n"
    "\n"
    "  formats                              list presets and their expansion\n"
    "  format SPEC                          print the canonical spec\n"
    "  targets                              the instruction families of each ARCH: native, emulated\n"
    "                                       by ptxas (never emitted), or absent\n"
    "  ptx SPEC --arch ARCH [--m M --n N --k K] [--plain] [--hash] [choices]\n"
    "                                       print the PTX of the kernel(s) that would run, annotated\n"
    "                                       with the tile IR (--plain: exactly the PTX that is\n"
    "                                       loaded; --hash: only '<sha256>  <config>' of that PTX)\n"
    "  check SPEC --arch ARCH [--m LIST --n N --k K] [choices]\n"
    "                                       assemble with ptxas ($PTXAS overrides the path);\n"
    "                                       report registers, spills, smem; exit 1 on a problem\n"
    "  run SPEC --m M --n N --k K --a F --w F --w-scale F [--w-zero F] [--w-global F]\n"
    "      [--bias F] [--a-scale F] [--a-global F] --out F [--device D] [choices]\n"
    "                                       run one GEMM on the GPU from interchange files\n"
    "  quant SPEC --m M --k K --x F [--x-type f32|f16|bf16] --a F --a-scale F [--a-global F] [--device D]\n"
    "                                       quantize M x K activations on the host (the reference\n"
    "                                       quantizer) into the files `run` reads; --device: on the\n"
    "                                       GPU (f16/bf16 in), checked against the host's\n"
    "  quant SPEC --arch ARCH [--x-type f16|bf16]\n"
    "                                       print the GPU quantizer's PTX\n"
    "  bench SPEC --m LIST --n N --k K [--json] [--sweep [--list --arch ARCH]] [--compile] [--dispatch]\n"
    "        [--device D] [choices]\n"
    "                                       time kernels on the GPU (median of 15, weights > 256 MB);\n"
    "                                       --sweep: every legal config (--list --arch: print them, no\n"
    "                                       GPU); --compile: spec to CUfunction\n"
    "                                       --dispatch: host time of one wb_layer_gemm call\n"
    "  selftest [--quick] [--list [--arch ARCH]] [--pending] [--m LIST] [--only TEXT] [--skip TEXT] [--ledger FILE]\n"
    "           [--seed S] [--device D]\n"
    "                                       GPU correctness over formats and shapes; --pending: only\n"
    "                                       the cases whose kernel the ledger does not hold yet\n"
    "                                       (--ledger, default tests/gpu/ledger.tsv: read by --pending,\n"
    "                                       each validated kernel appended)\n"
    "  help, --help                         this text;  --version  the version\n"
    "\n"
    "choices (zero = let warble choose): --mma mma.sync|wgmma|tcgen05  --load ldg|cp.async|tma\n"
    "  --stages N  --warps-n N  --warps-k N\n"
    "  --m-tiles N         tokens a block, in 8s (wgmma: 1 to 32, a power of two, or 24 on --load tma:\n"
    "                      192 tokens, the pick at large M for fp8, e4m3 x int4 and 16-bit activations)\n"
    "  --k-slices N        k64 slices each warp takes from a stage (1, 2, 4; mma.sync, 16-bit or 8-bit\n"
    "                      activations, 8-bit ones with scale groups along K in multiples of 64 x N)\n"
    "  --batch-invariant   the same bits for a row whatever M is (mma.sync, split-K fixed by K)\n"
    "  --persistent        one block per SM walks the output tiles (--load tma; the pick with 192-token\n"
    "                      tiles for fp8 and 16-bit activations; in pairs of blocks walking pairs of\n"
    "                      tiles where --cluster 2 is chosen or asked)\n"
    "  --cluster 1|2|4     2: blocks in pairs on neighbouring channel tiles, sharing the activation tile by\n"
    "                      TMA multicast (--load tma, even --m-tiles; the default there where the tiles\n"
    "                      pair up); 4: quads on two channel tiles of two token tiles, sharing the\n"
    "                      weight tile too (forced only; even --warps-n, not --persistent); 1: single\n"
    "                      blocks\n"
    "  --split-k 1|2       2: blocks in pairs on one output tile, each taking half of K, summed in f32\n"
    "                      through distributed shared memory (sm_90 and newer; the default for 16-bit\n"
    "                      activations where wgmma's 128 x 128 tiles leave over half the SMs idle, and\n"
    "                      at M = 9..16 where mma.sync blocks of one warp along N stay over a long K);\n"
    "                      1: single blocks\n"
    "  --gemv on|off       the matrix-vector kernel, M = 1 only: int2 and int3 weights as raw code bits,\n"
    "                      their bias off each group's sum through the token's activation sums (mma.sync,\n"
    "                      one m-tile; the default at M = 1 where it applies)\n"
    "ARCH: sm_75 sm_80 sm_86 sm_89 sm_90a sm_100a sm_103a sm_120a (aliases: turing, ampere, hopper,\n"
    "  b200, b300, rtx50, ...)\n"
    "exit status: 0 ok, 1 a failed check or run, 2 bad usage or input (unsupported specs included)\n";

static const struct {
    const char *name;
    int (*fn)(int argc, char **argv);
} commands[] = {
    {"formats", cmd_formats}, {"format", cmd_format}, {"ptx", cmd_ptx},       {"check", cmd_check},
    {"run", cmd_run},         {"bench", cmd_bench},   {"selftest", cmd_selftest}, {"targets", cmd_targets},
    {"quant", cmd_quant},
};

static int is_help(const char *s)
{
    return strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0 || strcmp(s, "help") == 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return cli_fail(CLI_USAGE, "no command given (try 'warble --help')");
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0 || (i == 1 && is_help(argv[1]))) {
            fputs(usage_text, stdout);
            return CLI_OK;
        }
    if (strcmp(argv[1], "--version") == 0) {
        printf("warble %s\n", wb_version());
        return CLI_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(argv[1], commands[i].name) != 0)
            continue;
        int rc = commands[i].fn(argc - 1, argv + 1);
        if (fflush(stdout) != 0 || ferror(stdout))
            return rc ? rc : cli_fail(CLI_FAILED, "writing to standard output failed");
        return rc;
    }
    return cli_fail(CLI_USAGE, "unknown command '%s' (try 'warble --help')", argv[1]);
}
