/* Option parsing and one-line errors shared by every warble subcommand. One table names every
 * option; each subcommand passes the mask of those it accepts, so a misplaced option is an error
 * instead of being silently ignored. */
#include "tools/cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    int flag; /* takes no value */
} opt_table[O_COUNT] = {
    [O_ARCH] = {"arch", 0},       [O_M] = {"m", 0},
    [O_N] = {"n", 0},             [O_K] = {"k", 0},
    [O_MMA] = {"mma", 0},         [O_LOAD] = {"load", 0},
    [O_STAGES] = {"stages", 0},   [O_MTILES] = {"m-tiles", 0},
    [O_WARPSN] = {"warps-n", 0},  [O_WARPSK] = {"warps-k", 0}, [O_KSLICES] = {"k-slices", 0},
    [O_CLUSTER] = {"cluster", 0}, [O_SPLITK] = {"split-k", 0},  [O_GEMV] = {"gemv", 0},
    [O_BATCH_INVARIANT] = {"batch-invariant", 1}, [O_PERSISTENT] = {"persistent", 1},
    [O_ANNOTATE] = {"annotate", 1}, [O_PLAIN] = {"plain", 1}, [O_HASH] = {"hash", 1},
    [O_JSON] = {"json", 1},       [O_SWEEP] = {"sweep", 1}, [O_DISPATCH] = {"dispatch", 1},
    [O_COMPILE] = {"compile", 1},
    [O_QUICK] = {"quick", 1},     [O_LIST] = {"list", 1},    [O_PENDING] = {"pending", 1},
    [O_LEDGER] = {"ledger", 0},   [O_SEED] = {"seed", 0},
    [O_DEVICE] = {"device", 0},   [O_ONLY] = {"only", 0},     [O_SKIP] = {"skip", 0},
    [O_X] = {"x", 0},             [O_XTYPE] = {"x-type", 0},
    [O_A] = {"a", 0},             [O_ASCALE] = {"a-scale", 0},
    [O_AGLOBAL] = {"a-global", 0}, [O_W] = {"w", 0},
    [O_WSCALE] = {"w-scale", 0},  [O_WZERO] = {"w-zero", 0},
    [O_WGLOBAL] = {"w-global", 0}, [O_BIAS] = {"bias", 0},
    [O_OUT] = {"out", 0},
};

static const char *const mma_names[] = {
    [WB_MMA_SYNC] = "mma.sync", [WB_MMA_WGMMA] = "wgmma", [WB_MMA_TCGEN05] = "tcgen05"};
static const char *const load_names[] = {
    [WB_LOAD_LDG] = "ldg", [WB_LOAD_CP_ASYNC] = "cp.async", [WB_LOAD_TMA] = "tma"};

int cli_fail(int code, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* One line: fold embedded newlines (JIT logs, ptxas output) into "; ". */
    char line[4096];
    size_t j = 0;
    for (size_t i = 0; msg[i] && j + 3 < sizeof line; i++) {
        if (msg[i] == '\n' || msg[i] == '\r') {
            if (msg[i + 1] && j > 0 && line[j - 1] != ' ') {
                line[j++] = ';';
                line[j++] = ' ';
            }
        } else {
            line[j++] = msg[i];
        }
    }
    line[j] = 0;
    fprintf(stderr, "warble: %s\n", line);
    return code;
}

int cli_status_exit(wb_status s)
{
    return (s == WB_ERR_INVALID || s == WB_ERR_UNSUPPORTED) ? CLI_USAGE : CLI_FAILED;
}

int cli_lib_fail(wb_status s, const char *context)
{
    const char *msg = wb_last_error();
    if (!msg || !*msg)
        msg = wb_status_str(s);
    if (strncmp(msg, "warble: ", 8) == 0)
        msg += 8;
    if (context && *context)
        return cli_fail(cli_status_exit(s), "%s: %s", context, msg);
    return cli_fail(cli_status_exit(s), "%s", msg);
}

int cli_lib_fail_if(wb_status s, const char *context)
{
    return s == WB_OK ? 0 : cli_lib_fail(s, context);
}

int cli_device(const cli_args *a, int *device)
{
    int64_t d = 0;
    int rc = a->val[O_DEVICE] ? cli_parse_i64("--device", a->val[O_DEVICE], 0, 1024, &d) : 0;
    *device = (int)d;
    return rc;
}

int cli_has(const cli_args *a, cli_opt o) { return a->val[o] != NULL; }

int cli_parse_i64(const char *opt, const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || errno || v < lo || v > hi)
        return cli_fail(CLI_USAGE, "%s: '%s' is not an integer in [%lld, %lld]", opt, s,
                        (long long)lo, (long long)hi);
    *out = v;
    return 0;
}

int cli_parse_spec(const char *spec, wb_format *f)
{
    wb_status s = wb_format_parse(spec, f);
    return s == WB_OK ? 0 : cli_lib_fail(s, NULL);
}

const char *cli_spec_str(const wb_format *f, char *buf, size_t size)
{
    if (wb_format_print(f, buf, size) < 0 && size)
        buf[0] = 0;
    return buf;
}

static int parse_m_list(const char *s, cli_args *a)
{
    char tmp[1024];
    if (strlen(s) >= sizeof tmp)
        return cli_fail(CLI_USAGE, "--m: list too long");
    strcpy(tmp, s);
    a->nm = 0;
    for (char *save = NULL, *tok = strtok_r(tmp, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (a->nm == CLI_MAX_M)
            return cli_fail(CLI_USAGE, "--m: at most %d values", CLI_MAX_M);
        int rc = cli_parse_i64("--m", tok, 1, INT32_MAX, &a->m[a->nm]);
        if (rc)
            return rc;
        a->nm++;
    }
    if (a->nm == 0)
        return cli_fail(CLI_USAGE, "--m: empty list");
    return 0;
}

static int parse_name(const char *opt, const char *s, const char *const *names, int count, int *out)
{
    for (int i = 1; i < count; i++)
        if (names[i] && strcmp(s, names[i]) == 0) {
            *out = i;
            return 0;
        }
    char allowed[128] = "";
    for (int i = 1; i < count; i++) {
        strcat(allowed, i > 1 ? ", " : "");
        strcat(allowed, names[i]);
    }
    return cli_fail(CLI_USAGE, "%s: unknown value '%s' (allowed: %s)", opt, s, allowed);
}

static int parse_config(cli_args *a)
{
    int rc = 0;
    int64_t v;
    static const struct { cli_opt o; size_t off; } ints[] = {
        {O_STAGES, offsetof(wb_config, stages)},   {O_MTILES, offsetof(wb_config, m_tiles)},
        {O_WARPSN, offsetof(wb_config, warps_n)},  {O_WARPSK, offsetof(wb_config, warps_k)},
        {O_KSLICES, offsetof(wb_config, k_slices)}, {O_CLUSTER, offsetof(wb_config, cluster)},
        {O_SPLITK, offsetof(wb_config, split_k)},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        if (!a->val[ints[i].o])
            continue;
        char opt[32];
        snprintf(opt, sizeof opt, "--%s", opt_table[ints[i].o].name);
        if ((rc = cli_parse_i64(opt, a->val[ints[i].o], 1, 1024, &v)))
            return rc;
        *(int *)((char *)&a->cfg + ints[i].off) = (int)v;
        a->have_cfg = 1;
    }
    if (a->val[O_MMA]) {
        if ((rc = parse_name("--mma", a->val[O_MMA], mma_names, 4, &a->cfg.mma)))
            return rc;
        a->have_cfg = 1;
    }
    if (a->val[O_LOAD]) {
        if ((rc = parse_name("--load", a->val[O_LOAD], load_names, 4, &a->cfg.load)))
            return rc;
        a->have_cfg = 1;
    }
    if (a->val[O_GEMV]) { /* on: 1, off: -1 (0 is warble's choice) */
        static const char *const gemv_names[] = {"", "on", "off"};
        int g = 0;
        if ((rc = parse_name("--gemv", a->val[O_GEMV], gemv_names, 3, &g)))
            return rc;
        a->cfg.gemv = g == 1 ? 1 : -1;
        a->have_cfg = 1;
    }
    if (cli_has(a, O_BATCH_INVARIANT))
        a->cfg.batch_invariant = a->have_cfg = 1;
    if (cli_has(a, O_PERSISTENT))
        a->cfg.persistent = a->have_cfg = 1;
    return 0;
}

/* Turn the raw option texts into values. */
static int parse_values(cli_args *a)
{
    int rc;
    if (a->val[O_ARCH]) {
        wb_status s = wb_arch_parse(a->val[O_ARCH], &a->arch);
        if (s != WB_OK)
            return cli_lib_fail(s, "--arch");
    }
    if (a->val[O_M] && (rc = parse_m_list(a->val[O_M], a)))
        return rc;
    if (a->val[O_N] && (rc = cli_parse_i64("--n", a->val[O_N], 1, INT32_MAX, &a->n)))
        return rc;
    if (a->val[O_K] && (rc = cli_parse_i64("--k", a->val[O_K], 1, INT32_MAX, &a->k)))
        return rc;
    return parse_config(a);
}

static int find_opt(const char *name, size_t len)
{
    for (int i = 0; i < O_COUNT; i++)
        if (strlen(opt_table[i].name) == len && strncmp(opt_table[i].name, name, len) == 0)
            return i;
    return -1;
}

int cli_parse(int argc, char **argv, uint64_t allowed, int want_spec, cli_args *out)
{
    memset(out, 0, sizeof *out);
    out->cmd = argv[0];
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (arg[0] != '-' || arg[1] == 0) {
            if (!want_spec || out->spec)
                return cli_fail(CLI_USAGE, "%s: unexpected argument '%s'", out->cmd, arg);
            out->spec = arg;
            continue;
        }
        if (arg[1] != '-')
            return cli_fail(CLI_USAGE, "%s: unknown option '%s' (try 'warble --help')", out->cmd, arg);
        const char *name = arg + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        int o = find_opt(name, len);
        if (o < 0 || !(allowed & OPT(o)))
            return cli_fail(CLI_USAGE, "%s: unknown option '--%.*s' (try 'warble --help')", out->cmd,
                            (int)len, name);
        if (out->val[o])
            return cli_fail(CLI_USAGE, "%s: option --%s given twice", out->cmd, opt_table[o].name);
        if (opt_table[o].flag) {
            if (eq)
                return cli_fail(CLI_USAGE, "%s: option --%s takes no value", out->cmd, opt_table[o].name);
            out->val[o] = "1";
        } else if (eq) {
            out->val[o] = eq + 1;
        } else if (i + 1 < argc) {
            out->val[o] = argv[++i];
        } else {
            return cli_fail(CLI_USAGE, "%s: option --%s needs a value", out->cmd, opt_table[o].name);
        }
    }
    if (want_spec && !out->spec)
        return cli_fail(CLI_USAGE, "%s: missing SPEC (try 'warble --help')", out->cmd);
    return parse_values(out);
}
