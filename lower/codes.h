/* How B-bit weight codes are split into bit planes of 4, 3, 2 and 1 bits, and where each plane puts
 * the field of one MMA register pair. Shared by the packer (lower/pack.c) and the dequant lowering.
 *
 * A lane holds 32 codes per k64 chunk (4 k16 steps x 4 registers x 2 halves) in B words: a 4-bit
 * plane is 4 words (one per step), a 3-bit plane 3 words, a 2-bit plane 2 words, a 1-bit plane 1
 * word. In every plane the field of register `reg` of step `step` sits at the same bit in both 16-bit
 * halves (low half: the first k of the pair, high half: the second), so `(word >> bit) & mask` yields
 * both codes at once; and the fields of registers 2r and 2r + 1 of a step lie side by side in one
 * word (the odd one `width` bits up), except in a 3-bit plane's last two couples. A 3-bit plane holds
 * five fields a half in each of its words (bits 0, 3, 6, 9, 12) and splits the field of step 3,
 * register 3 over bit 15 of its three words (code bit i in word i): wb_plane_split. */
#ifndef WB_CODES_H
#define WB_CODES_H

typedef struct wb_plane {
    int width;      /* 4, 3, 2 or 1 bits */
    int offset;     /* which bits of the code: [offset, offset + width) */
    int first_word; /* the plane's first word among the lane's words */
} wb_plane;

typedef struct wb_codes {
    int bits, words, nplanes;
    wb_plane plane[3];
} wb_codes;

/* Planes of a B-bit code, B = 1..8: 1, 2, 3, 4, 4+1, 4+2, 4+2+1, 4+4. */
void wb_codes_get(int bits, wb_codes *out);
/* Word (among the lane's words) and bit (in the low half) of a register pair's field in a plane; not
 * for a split field. */
void wb_plane_field(const wb_plane *p, int step, int reg, int *word, int *bit);
/* Whether the field is split over several words (a 3-bit plane's step 3, register 3). */
int wb_plane_split(const wb_plane *p, int step, int reg);
/* Word and bit (in the low half) of bit i of a register pair's field, split or not. */
void wb_plane_bit(const wb_plane *p, int step, int reg, int i, int *word, int *bit);

#endif
