/* `warble ptx` (print the PTX, or its hash, of the kernels that would run) and `warble check`
 * (assemble each with ptxas -v and report registers, spills and shared memory). Both resolve a list
 * of M into distinct kernels first: a kernel's PTX depends on (format, arch, config) only. */
#include "tools/cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_PICKS CLI_MAX_M

typedef struct pick {
    wb_config cfg;
    char cfg_str[160];
    int64_t m_first;
    char ms[256]; /* the Ms that use it, "1,7,16" */
} pick;

#define PTX_OPTS (OPT(O_ARCH) | CLI_SHAPE_OPTS | CLI_CONFIG_OPTS)

static int parse_common(int argc, char **argv, uint64_t extra, cli_args *a, wb_format *f)
{
    int rc = cli_parse(argc, argv, PTX_OPTS | extra, 1, a);
    if (rc || (rc = cli_parse_spec(a->spec, f)))
        return rc;
    if (!cli_has(a, O_ARCH))
        return cli_fail(CLI_USAGE, "%s: --arch is required", a->cmd);
    if (!a->nm)
        a->m[0] = 1, a->nm = 1;
    if (!a->n)
        a->n = 4096;
    if (!a->k)
        a->k = 4096;
    return 0;
}

/* Choose the config of every M and keep the distinct ones, in order of first use. */
static int pick_kernels(const cli_args *a, const wb_format *f, pick *p, int *count)
{
    *count = 0;
    for (int i = 0; i < a->nm; i++) {
        int64_t m = a->m[i];
        wb_config cfg = a->cfg;
        wb_status s = wb_format_check_shape(f, m, a->n, a->k);
        if (s == WB_OK)
            s = wb_config_choose(f, a->arch, m, a->n, a->k, &cfg);
        if (s == WB_OK)
            s = wb_kernel_check_shape(f, &cfg, m, a->n, a->k);
        if (s != WB_OK) {
            char ctx[96];
            snprintf(ctx, sizeof ctx, "%s, m=%lld n=%lld k=%lld", wb_arch_name(a->arch), (long long)m,
                     (long long)a->n, (long long)a->k);
            return cli_lib_fail(s, ctx);
        }
        int j = 0;
        while (j < *count && !wb_config_equal(&p[j].cfg, &cfg))
            j++;
        if (j == *count) {
            memset(&p[j], 0, sizeof p[j]);
            p[j].cfg = cfg;
            p[j].m_first = m;
            wb_config_print(&cfg, p[j].cfg_str, sizeof p[j].cfg_str);
            (*count)++;
        }
        size_t len = strlen(p[j].ms);
        snprintf(p[j].ms + len, sizeof p[j].ms - len, "%s%lld", len ? "," : "", (long long)m);
    }
    return 0;
}

static int emit(const wb_format *f, wb_arch arch, const pick *p, int flags, char **ptx)
{
    wb_status s = wb_kernel_ptx(f, arch, &p->cfg, flags, ptx);
    if (s != WB_OK) {
        char ctx[200];
        snprintf(ctx, sizeof ctx, "%s %s", wb_arch_name(arch), p->cfg_str);
        return cli_lib_fail(s, ctx);
    }
    return 0;
}

int cmd_ptx(int argc, char **argv)
{
    cli_args a;
    wb_format f;
    pick p[MAX_PICKS];
    int n, rc = parse_common(argc, argv, OPT(O_ANNOTATE) | OPT(O_PLAIN) | OPT(O_HASH), &a, &f);
    if (rc || (rc = pick_kernels(&a, &f, p, &n)))
        return rc;
    if (cli_has(&a, O_ANNOTATE) && cli_has(&a, O_PLAIN))
        return cli_fail(CLI_USAGE, "ptx: --annotate and --plain exclude each other");
    /* annotated by default (the contract); --plain and --hash use the PTX that is loaded and run,
     * whose sha256 the ledger records */
    int flags = cli_has(&a, O_PLAIN) || cli_has(&a, O_HASH) ? 0 : WB_EMIT_ANNOTATE;
    for (int i = 0; i < n; i++) {
        char *ptx = NULL;
        if ((rc = emit(&f, a.arch, &p[i], flags, &ptx)))
            return rc;
        if (cli_has(&a, O_HASH)) {
            char hex[65];
            wb_sha256_hex(ptx, strlen(ptx), hex);
            printf("%s  %s\n", hex, p[i].cfg_str);
        } else {
            if (n > 1)
                printf("// warble: kernel %d of %d, m=%s, %s\n", i + 1, n, p[i].ms, p[i].cfg_str);
            fputs(ptx, stdout);
        }
        free(ptx);
    }
    return CLI_OK;
}

/* ---- check */

typedef struct ptxas_report {
    int exit_status; /* of ptxas; -1 when it could not run */
    int regs, spill_st, spill_ld, smem;
    char problem[256]; /* first warning or error line, "" when none */
} ptxas_report;

/* Run ptxas -arch=ARCH -v -o /dev/null PATH; the whole output (stdout and stderr) lands in *text. */
static int run_ptxas(const char *arch, const char *path, char **text, int *status)
{
    const char *env = getenv("PTXAS");
    const char *exe = env && *env ? env : "ptxas";
    char archopt[32];
    snprintf(archopt, sizeof archopt, "-arch=%s", arch);
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]), close(fd[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(fd[1], 1), dup2(fd[1], 2);
        close(fd[0]), close(fd[1]);
        char *args[] = {(char *)exe, archopt, "-v", "-o", "/dev/null", (char *)path, NULL};
        execvp(exe, args);
        if (!(env && *env) && errno == ENOENT) {
            args[0] = "/usr/local/cuda/bin/ptxas";
            execv(args[0], args);
        }
        fprintf(stderr, "cannot execute %s: %s\n", exe, strerror(errno));
        _exit(127);
    }
    close(fd[1]);
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);
    ssize_t got;
    while (buf) {
        if (len + 1024 > cap) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
        }
        got = read(fd[0], buf + len, cap - len - 1);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        len += (size_t)got;
    }
    close(fd[0]);
    int ws;
    while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
    }
    *status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + (WIFSIGNALED(ws) ? WTERMSIG(ws) : 0);
    if (!buf)
        return -1;
    buf[len] = 0;
    *text = buf;
    return 0;
}

static void parse_ptxas(const char *text, ptxas_report *r)
{
    for (const char *line = text; line && *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        char l[512];
        snprintf(l, sizeof l, "%.*s", (int)(len < sizeof l - 1 ? len : sizeof l - 1), line);
        const char *p;
        int v, v2;
        if ((p = strstr(l, "Used ")) && sscanf(p, "Used %d registers", &v) == 1 && v > r->regs)
            r->regs = v;
        if ((p = strstr(l, " bytes smem")) != NULL) {
            while (p > l && p[-1] >= '0' && p[-1] <= '9')
                p--;
            if (sscanf(p, "%d", &v) == 1 && v > r->smem)
                r->smem = v;
        }
        if ((p = strstr(l, "bytes spill stores")) != NULL) {
            const char *q = p;
            while (q > l && (q[-1] == ' ' || (q[-1] >= '0' && q[-1] <= '9')))
                q--;
            if (sscanf(q, "%d bytes spill stores, %d bytes spill loads", &v, &v2) == 2)
                r->spill_st += v, r->spill_ld += v2;
        }
        /* a serialized wgmma (C7513: "Potential Performance Loss") is a problem too: it runs each wgmma
         * to completion before the next instruction */
        if (!r->problem[0] && (strcasestr(l, "warning") || strcasestr(l, "error") ||
                               strstr(l, "cannot execute") || strstr(l, "Performance Loss")))
            snprintf(r->problem, sizeof r->problem, "%.200s", l);
        line = nl ? nl + 1 : NULL;
    }
}

/* Assemble one kernel; print its line; returns 0 when clean, 1 otherwise (or 2 on bad input). */
static int check_one(const cli_args *a, const wb_format *f, const char *spec, const pick *p)
{
    char *ptx = NULL;
    int rc = emit(f, a->arch, p, 0, &ptx);
    if (rc)
        return rc;
    wb_launch_dims d;
    memset(&d, 0, sizeof d);
    wb_status s = wb_kernel_dims(f, a->arch, &p->cfg, p->m_first, a->n, a->k, &d);
    if (s != WB_OK) {
        free(ptx);
        return cli_lib_fail(s, "wb_kernel_dims");
    }
    const char *tmpdir = getenv("TMPDIR");
    char path[512];
    snprintf(path, sizeof path, "%s/warble-check-XXXXXX.ptx", tmpdir && *tmpdir ? tmpdir : "/tmp");
    int fd = mkstemps(path, 4);
    if (fd < 0) {
        free(ptx);
        return cli_fail(CLI_FAILED, "cannot create a temporary file in %s: %s",
                        tmpdir && *tmpdir ? tmpdir : "/tmp", strerror(errno));
    }
    size_t len = strlen(ptx), off = 0;
    while (off < len) {
        ssize_t w = write(fd, ptx + off, len - off);
        if (w <= 0 && errno != EINTR)
            break;
        if (w > 0)
            off += (size_t)w;
    }
    close(fd);
    free(ptx);
    if (off < len) {
        unlink(path);
        return cli_fail(CLI_FAILED, "cannot write %s", path);
    }
    ptxas_report r;
    memset(&r, 0, sizeof r);
    char *text = NULL;
    int st = run_ptxas(wb_arch_name(a->arch), path, &text, &r.exit_status);
    unlink(path);
    if (st != 0)
        return cli_fail(CLI_FAILED, "cannot run ptxas: %s", strerror(errno));
    parse_ptxas(text, &r);
    free(text);
    const char *verdict = "ok";
    char why[320] = "";
    if (r.exit_status != 0)
        snprintf(why, sizeof why, "FAIL ptxas exit %d%s%s", r.exit_status, r.problem[0] ? ": " : "", r.problem);
    else if (r.problem[0])
        snprintf(why, sizeof why, "FAIL ptxas: %s", r.problem);
    else if (r.spill_st || r.spill_ld)
        snprintf(why, sizeof why, "FAIL spills: %d bytes stores, %d bytes loads", r.spill_st, r.spill_ld);
    if (why[0])
        verdict = why;
    printf("%s %s %s m=%s regs=%d smem=%d+%u spills=%d %s\n", wb_arch_name(a->arch), spec, p->cfg_str,
           p->ms, r.regs, r.smem, d.smem_bytes, r.spill_st + r.spill_ld, verdict);
    fflush(stdout);
    return why[0] ? CLI_FAILED : 0;
}

int cmd_check(int argc, char **argv)
{
    cli_args a;
    wb_format f;
    pick p[MAX_PICKS];
    char spec[512];
    int n, failed = 0, rc = parse_common(argc, argv, 0, &a, &f);
    if (rc || (rc = pick_kernels(&a, &f, p, &n)))
        return rc;
    cli_spec_str(&f, spec, sizeof spec);
    for (int i = 0; i < n; i++) {
        rc = check_one(&a, &f, spec, &p[i]);
        if (rc == CLI_USAGE)
            return rc;
        failed += rc != 0;
    }
    if (failed)
        return cli_fail(CLI_FAILED, "check: %d of %d kernels failed (%s on %s)", failed, n, spec,
                        wb_arch_name(a.arch));
    return CLI_OK;
}
