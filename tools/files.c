/* Interchange files (contract section 3) on disk: whole-file reads of an exact size, and writes that
 * leave no partial file behind. Shared by `warble run` and `warble quant`. */
#include "tools/cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int cli_read_file(const char *opt, const char *path, size_t expected, int code_bits, void **out)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return cli_fail(CLI_USAGE, "%s: cannot open '%s': %s", opt, path, strerror(errno));
    struct stat st;
    if (fstat(fileno(fp), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(fp);
        return cli_fail(CLI_USAGE, "%s: '%s' is not a regular file", opt, path);
    }
    if ((size_t)st.st_size != expected) {
        fclose(fp);
        return cli_fail(CLI_USAGE, "%s: '%s': expected %zu bytes, got %lld", opt, path, expected,
                        (long long)st.st_size);
    }
    uint8_t *buf = malloc(expected ? expected : 1);
    if (!buf) {
        fclose(fp);
        return cli_fail(CLI_FAILED, "out of host memory (%zu bytes)", expected);
    }
    size_t got = fread(buf, 1, expected, fp);
    fclose(fp);
    if (got != expected) {
        free(buf);
        return cli_fail(CLI_USAGE, "%s: '%s': expected %zu bytes, got %zu", opt, path, expected, got);
    }
    if (code_bits > 0 && code_bits < 8)
        for (size_t i = 0; i < expected; i++)
            if (buf[i] >> code_bits) {
                unsigned byte = buf[i];
                free(buf);
                return cli_fail(CLI_USAGE,
                                "%s: '%s': byte %zu is 0x%02x, but %d-bit codes must have zero high bits",
                                opt, path, i, byte, code_bits);
            }
    *out = buf;
    return 0;
}

int cli_write_file(const char *opt, const char *path, const void *data, size_t bytes)
{
    FILE *fp = fopen(path, "wb");
    if (!fp)
        return cli_fail(CLI_USAGE, "%s: cannot create '%s': %s", opt, path, strerror(errno));
    int bad = fwrite(data, 1, bytes, fp) != bytes;
    bad |= fclose(fp) != 0;
    if (bad) {
        remove(path);
        return cli_fail(CLI_FAILED, "%s: writing '%s' failed: %s", opt, path, strerror(errno));
    }
    return 0;
}
