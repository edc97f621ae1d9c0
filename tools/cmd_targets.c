/* `warble targets`: the instruction families of every target (lower/isa.def), as a table. */
#include "tools/cli.h"

#include <string.h>

int cmd_targets(int argc, char **argv)
{
    cli_args a;
    int rc = cli_parse(argc, argv, 0, 0, &a);
    if (rc)
        return rc;
    printf("%-36s", "instruction family");
    for (int t = 0; t < WB_ARCH_COUNT; t++)
        printf(t + 1 < WB_ARCH_COUNT ? " %-7s" : " %s", wb_arch_name((wb_arch)t));
    printf("\n");
    for (int i = 0; i < wb_isa_count(); i++) {
        printf("%-36s", wb_isa_name(i));
        for (int t = 0; t < WB_ARCH_COUNT; t++) {
            wb_isa_status s = wb_isa_get((wb_arch)t, i);
            printf(t + 1 < WB_ARCH_COUNT ? " %-7s" : " %s",
                   s == WB_ISA_NATIVE ? "yes" : s == WB_ISA_EMULATED ? "emul" : "-");
        }
        printf("\n");
    }
    printf("\nyes: native; emul: ptxas accepts it but expands it into a slower sequence, so warble never\n"
           "emits it; -: ptxas rejects it for that target. Facts from ptxas 13.0 probes.\n"
           "fp4 x fp4 with the MMA applying the block scales (NVFP4 x NVFP4, MXFP4 x MXFP4): mma.sync\n"
           "kind::mxf4nvf4 .scale_vec::4X / kind::mxf4 .scale_vec::2X on sm_120a; tcgen05.mma kind::mxf4nvf4\n"
           ".scale_vec::4X / kind::mxf4 .scale_vec::2X on sm_100a and sm_103a with --mma tcgen05.\n");
    return CLI_OK;
}
