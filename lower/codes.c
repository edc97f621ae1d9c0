/* Bit planes of packed weight codes (see lower/codes.h). */
#include "lower/codes.h"

void wb_codes_get(int bits, wb_codes *c)
{
    static const int split[9][3] = {{0}, {1}, {2}, {2, 1}, {4}, {4, 1}, {4, 2}, {4, 2, 1}, {4, 4}};
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
