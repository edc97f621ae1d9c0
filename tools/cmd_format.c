/* `warble formats` and `warble format SPEC`: the format layer only, no kernels. */
#include "tools/cli.h"

int cmd_formats(int argc, char **argv)
{
    cli_args a;
    int rc = cli_parse(argc, argv, 0, 0, &a);
    if (rc)
        return rc;
    for (int i = 0; i < wb_preset_count(); i++) {
        wb_format f;
        char canon[512];
        const char *text = wb_preset_spec(i);
        if (wb_format_parse(wb_preset_name(i), &f) == WB_OK)
            text = cli_spec_str(&f, canon, sizeof canon);
        printf("%-12s %s\n", wb_preset_name(i), text);
    }
    return CLI_OK;
}

int cmd_format(int argc, char **argv)
{
    cli_args a;
    wb_format f;
    char canon[512];
    int rc = cli_parse(argc, argv, 0, 1, &a);
    if (rc || (rc = cli_parse_spec(a.spec, &f)))
        return rc;
    printf("%s\n", cli_spec_str(&f, canon, sizeof canon));
    return CLI_OK;
}
