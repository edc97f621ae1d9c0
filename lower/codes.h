/* How B-bit weight codes are split into bit planes of 4, 2 and 1 bits, and where each plane puts the
 * field of one MMA register pair. Shared by the packer (lower/pack.c) and the dequant lowering.
 *
 * A lane holds 32 codes per k64 chunk (4 k16 steps x 4 registers x 2 halves) in B words: a 4-bit
 * plane is 4 words (one per step), a 2-bit plane 2 words, a 1-bit plane 1 word. In every plane the
 * field of register `reg` of step `step` sits at the same bit in both 16-bit halves (low half: the
 * first k of the pair, high half: the second), so `(word >> bit) & mask` yields both codes at once. */
#ifndef WB_CODES_H
#define WB_CODES_H

typedef struct wb_plane {
    int width;      /* 4, 2 or 1 bits */
    int offset;     /* which bits of the code: [offset, offset + width) */
    int first_word; /* the plane's first word among the lane's words */
} wb_plane;

typedef struct wb_codes {
    int bits, words, nplanes;
    wb_plane plane[3];
} wb_codes;

/* Planes of a B-bit code, B = 1..8: 1, 2, 2+1, 4, 4+1, 4+2, 4+2+1, 4+4. */
void wb_codes_get(int bits, wb_codes *out);
/* Word (among the lane's words) and bit (in the low half) of a register pair's field in a plane. */
void wb_plane_field(const wb_plane *p, int step, int reg, int *word, int *bit);

#endif
