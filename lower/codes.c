/* Bit planes of packed weight codes (see lower/codes.h). */
#include "lower/codes.h"

void wb_codes_get(int bits, wb_codes *c)
{
    static const int split[9][3] = {{0}, {1}, {2}, {3}, {4}, {4, 1}, {4, 2}, {4, 2, 1}, {4, 4}};
    c->bits = bits;
    c->words = 0;
    c->nplanes = 0;
    int offset = 0;
    for (int i = 0; i < 3 && bits >= 1 && bits <= 8 && split[bits][i]; i++) {
        wb_plane *p = &c->plane[c->nplanes++];
        p->width = split[bits][i];
        p->offset = offset;
        p->first_word = c->words;
        offset += p->width;
        c->words += p->width; /* 32 codes of w bits: w words */
    }
}

void wb_plane_field(const wb_plane *p, int step, int reg, int *word, int *bit)
{
    switch (p->width) {
    case 4:
        *word = p->first_word + step;
        *bit = 4 * reg;
        break;
    case 3: { /* couple c = (step, reg / 2): c < 6 at bits 0, 3 or 6, 9 of word c / 2; then w0 and w1 at 12,
               * w2 at 12 and the split field */
        int c = step * 2 + reg / 2, odd = reg & 1;
        *word = p->first_word + (c < 6 ? c / 2 : c == 6 ? odd : 2);
        *bit = c < 6 ? 3 * ((c % 2) * 2 + odd) : 12;
        break;
    }
    case 2:
        *word = p->first_word + step / 2;
        *bit = 2 * ((step % 2) * 4 + reg);
        break;
    default:
        *word = p->first_word;
        *bit = step * 4 + reg;
        break;
    }
}

int wb_plane_split(const wb_plane *p, int step, int reg) { return p->width == 3 && step == 3 && reg == 3; }

void wb_plane_bit(const wb_plane *p, int step, int reg, int i, int *word, int *bit)
{
    if (wb_plane_split(p, step, reg)) {
        *word = p->first_word + i;
        *bit = 15;
        return;
    }
    wb_plane_field(p, step, reg, word, bit);
    *bit += i;
}
