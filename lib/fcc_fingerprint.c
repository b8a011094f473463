// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * FCC fingerprint unit (reference model). Algorithm and bit layout: docs/hw/fcc.md.
 *
 * Everything is integer arithmetic on the fixed 128x96 working grid, with no
 * allocation and small stack frames, because the same file is built into
 * vrex.ko. Constants below are part of the hardware definition: changing any
 * of them changes every fingerprint.
 */
#include "fcc_fingerprint.h"

/* Source samples per working-grid pixel along each axis (4x4 = 16 averaged; unrolled below). */
#define FCC_SAMPLES 4u

/*
 * A non-zero vector must beat the zero vector's SAD by this margin (absolute
 * part in SAD units over 64 pixels, plus 1/16 of the zero SAD) so sensor and
 * codec noise on a static, flat or repetitive block yields no motion.
 */
#define FCC_ZERO_BIAS 96u
#define FCC_ZERO_BIAS_REL_SHIFT 4

/* Centre region on the macroblock grid: columns 3..12, rows 3..8 (60/192 = 31 %). */
#define FCC_CX0 3
#define FCC_CX1 13
#define FCC_CY0 3
#define FCC_CY1 9
#define FCC_CENTRE_MBS ((FCC_CX1 - FCC_CX0) * (FCC_CY1 - FCC_CY0))
#define FCC_BACKGROUND_MBS (VREX_FCC_NMB - FCC_CENTRE_MBS)

/* Fingerprint layout: four 8-bit thermometer fields, then the appearance bits. */
#define FCC_THERMO_BITS 8
#define FCC_BIT_CENTRE 0
#define FCC_BIT_BACKGROUND 8
#define FCC_BIT_ROI_X 16
#define FCC_BIT_ROI_Y 24
#define FCC_BIT_APPEARANCE 32
#define FCC_APPEARANCE_BITS (VREX_FP_BITS - FCC_BIT_APPEARANCE)
#define FCC_APPEARANCE_SEED 0x56524558u /* "VREX" */

/* round(16 * sqrt(n)) for n = dx^2 + dy^2 <= 2 * VREX_FCC_SEARCH^2. */
static const u8 fcc_mag16[2 * VREX_FCC_SEARCH * VREX_FCC_SEARCH + 1] = {
	0,  16, 23, 28, 32, 36, 39, 42, 45, 48, 51, 53, 55, 58, 60, 62, 64,
	66, 68, 70, 72, 73, 75, 77, 78, 80, 82, 83, 85, 86, 88, 89, 91,
};

/*
 * Thermometer level boundaries. A feature at level L sets the field's low L
 * bits, so the Hamming distance between two codes is the level difference.
 * Centre motion is in 1/16 px, background motion in per mille of background
 * macroblocks that moved, ROI offsets in per mille of the half frame.
 */
static const u16 fcc_centre_steps[FCC_THERMO_BITS] = { 2, 4, 8, 12, 16, 24, 32, 48 };
static const u16 fcc_background_steps[FCC_THERMO_BITS] = { 8, 16, 32, 64, 128, 256, 512, 768 };
static const s16 fcc_roi_steps[FCC_THERMO_BITS] = { -750, -500, -300, -100, 100, 300, 500, 750 };

static int fcc_dim_ok(u32 dim)
{
	return dim >= VREX_FCC_MIN_DIM && dim <= VREX_FCC_MAX_DIM;
}

/*
 * Working-grid pixel t covers source positions [t * dim / n, (t + 1) * dim / n);
 * sample i (0 <= i < n * FCC_SAMPLES) sits at the centre of the i-th sub-cell.
 * Positions advance in 16.16 fixed point: dim << 16 fits u32 for dim <= 8192.
 */
static u32 fcc_sample_step(u32 dim, u32 n)
{
	return (dim << 16) / (n * FCC_SAMPLES);
}

static u32 fcc_sample_pos(u32 step, u32 i)
{
	return (i * step + step / 2) >> 16;
}

/* Sum of the samples at column @x of the four sample rows of one grid row. */
static u32 fcc_column(const u8 *const *rows, u32 x)
{
	return (u32)rows[0][x] + rows[1][x] + rows[2][x] + rows[3][x];
}

int vrex_fcc_downscale(const u8 *luma, u32 width, u32 height, u32 stride,
		       struct vrex_fcc_image *out)
{
	const u8 *rows[FCC_SAMPLES];
	u32 xstep, ystep, tx, ty, r;

	if (!luma || !out || !fcc_dim_ok(width) || !fcc_dim_ok(height) || stride < width)
		return VREX_EINVAL;

	xstep = fcc_sample_step(width, VREX_FCC_W);
	ystep = fcc_sample_step(height, VREX_FCC_H);

	for (ty = 0; ty < VREX_FCC_H; ty++) {
		u8 *dst = &out->pix[ty * VREX_FCC_W];
		u32 xf = xstep / 2;

		for (r = 0; r < FCC_SAMPLES; r++) {
			u32 y = fcc_sample_pos(ystep, ty * FCC_SAMPLES + r);

			rows[r] = luma + (size_t)y * stride;
		}

		/* Unrolled by hand: the kernel builds at -O2, where this loop dominates. */
		for (tx = 0; tx < VREX_FCC_W; tx++) {
			u32 sum = fcc_column(rows, xf >> 16) +
				  fcc_column(rows, (xf + xstep) >> 16) +
				  fcc_column(rows, (xf + 2 * xstep) >> 16) +
				  fcc_column(rows, (xf + 3 * xstep) >> 16);

			xf += FCC_SAMPLES * xstep;
			dst[tx] = (u8)((sum + FCC_SAMPLES * FCC_SAMPLES / 2) /
				       (FCC_SAMPLES * FCC_SAMPLES));
		}
	}
	return VREX_OK;
}

/*
 * SAD of two 8x8 blocks (rows VREX_FCC_W apart). Gives up once the first half
 * already reaches @limit: one check per half keeps the branch predictable. A
 * partial sum is only ever compared against @limit, so where the search stops
 * never changes a vector.
 *
 * x86-64 user space (the HAL's emulation, the QEMU device) sums two rows per
 * psadbw (SSE2, part of the base ISA); the kernel's simulated device and other
 * CPUs keep the scalar rows. Both compute the same sums.
 */
#if defined(__SSE2__) && !defined(__KERNEL__)
#include <emmintrin.h>

/* Row @j of a block: 8 bytes in the low half of a register. */
static __m128i fcc_row(const u8 *p, int j)
{
	return _mm_loadl_epi64((const __m128i *)(const void *)(p + j * VREX_FCC_W));
}

/* SAD of rows @j and @j + 1 of both blocks, one row per 64-bit lane. */
static __m128i fcc_sad_rows2(const u8 *a, const u8 *b, int j)
{
	return _mm_sad_epu8(_mm_unpacklo_epi64(fcc_row(a, j), fcc_row(a, j + 1)),
			    _mm_unpacklo_epi64(fcc_row(b, j), fcc_row(b, j + 1)));
}

static u32 fcc_sad_half(const u8 *a, const u8 *b, int j0)
{
	__m128i s = _mm_add_epi64(fcc_sad_rows2(a, b, j0), fcc_sad_rows2(a, b, j0 + 2));

	return (u32)_mm_cvtsi128_si32(s) + (u32)_mm_cvtsi128_si32(_mm_unpackhi_epi64(s, s));
}

static u32 fcc_sad8(const u8 *a, const u8 *b, u32 limit)
{
	u32 sad = fcc_sad_half(a, b, 0);

	if (sad >= limit)
		return sad;
	return sad + fcc_sad_half(a, b, VREX_FCC_MB / 2);
}
#else
/* SAD of one 8-pixel row. */
static u32 fcc_sad_row(const u8 *a, const u8 *b)
{
	u32 sad = 0;
	int i;

	for (i = 0; i < VREX_FCC_MB; i++) {
		int d = (int)a[i] - (int)b[i];

		sad += (u32)(d < 0 ? -d : d);
	}
	return sad;
}

static u32 fcc_sad8(const u8 *a, const u8 *b, u32 limit)
{
	u32 sad = 0;
	int j;

	for (j = 0; j < VREX_FCC_MB; j++) {
		sad += fcc_sad_row(a + j * VREX_FCC_W, b + j * VREX_FCC_W);
		if (j == VREX_FCC_MB / 2 - 1 && sad >= limit)
			break;
	}
	return sad;
}
#endif

static int fcc_in_range(int v, int lo, int hi)
{
	return v >= lo && v <= hi;
}

struct fcc_best {
	u32 cost;	/* SAD, plus the bias for a non-zero vector */
	u32 sad;
	u32 bias;
	int dx;
	int dy;
};

/*
 * Tries vector (dx, dy) for the block at (x0, y0) whose pixels start at @c.
 * Returns 1 once no candidate can beat the best one any more.
 */
static int fcc_try(const struct vrex_fcc_image *prev, const u8 *c, int x0, int y0, int dx, int dy,
		   struct fcc_best *best)
{
	int px = x0 - dx, py = y0 - dy;
	u32 sad;

	if (!fcc_in_range(px, 0, VREX_FCC_W - VREX_FCC_MB) ||
	    !fcc_in_range(py, 0, VREX_FCC_H - VREX_FCC_MB))
		return 0;
	sad = fcc_sad8(c, &prev->pix[py * VREX_FCC_W + px], best->cost - best->bias);
	if (sad + best->bias < best->cost) {
		best->cost = sad + best->bias;
		best->sad = sad;
		best->dx = dx;
		best->dy = dy;
	}
	return best->cost <= best->bias;
}

/*
 * Full search of one macroblock. A vector (dx, dy) means the block's content
 * moved by (dx, dy) since @prev, i.e. it is matched against prev at
 * (x - dx, y - dy). Candidates are visited ring by ring (Chebyshev radius 1..4,
 * raster order within a ring) and must be strictly better, so ties go to the
 * shorter vector and then to the earlier raster position: deterministic.
 */
static void fcc_search_block(const struct vrex_fcc_image *cur, const struct vrex_fcc_image *prev,
			     int bx, int by, s8 *mdx, s8 *mdy, u16 *msad)
{
	int x0 = bx * VREX_FCC_MB, y0 = by * VREX_FCC_MB;
	const u8 *c = &cur->pix[y0 * VREX_FCC_W + x0];
	struct fcc_best best = { 0 };
	int ring, dx, dy;

	best.sad = fcc_sad8(c, &prev->pix[y0 * VREX_FCC_W + x0], ~0u);
	best.cost = best.sad;
	best.bias = FCC_ZERO_BIAS + (best.sad >> FCC_ZERO_BIAS_REL_SHIFT);

	/* No moving candidate can beat the zero vector by the bias: skip the search. */
	if (best.cost <= best.bias)
		goto out;

	for (ring = 1; ring <= VREX_FCC_SEARCH; ring++) {
		for (dy = -ring; dy <= ring; dy++) {
			/* Inner rows of a ring hold only its two side columns. */
			int step = (dy == -ring || dy == ring) ? 1 : 2 * ring;

			for (dx = -ring; dx <= ring; dx += step)
				if (fcc_try(prev, c, x0, y0, dx, dy, &best))
					goto out;
		}
	}
out:
	*mdx = (s8)best.dx;
	*mdy = (s8)best.dy;
	*msad = (u16)best.sad;
}

void vrex_fcc_motion(const struct vrex_fcc_image *cur, const struct vrex_fcc_image *prev,
		     struct vrex_fcc_motion *mv)
{
	int bx, by;

	for (by = 0; by < VREX_FCC_MBY; by++) {
		for (bx = 0; bx < VREX_FCC_MBX; bx++) {
			int m = by * VREX_FCC_MBX + bx;

			fcc_search_block(cur, prev, bx, by, &mv->dx[m], &mv->dy[m], &mv->sad[m]);
		}
	}
}

static int fcc_is_centre(int bx, int by)
{
	return bx >= FCC_CX0 && bx < FCC_CX1 && by >= FCC_CY0 && by < FCC_CY1;
}

void vrex_fcc_features(const struct vrex_fcc_motion *mv, struct vrex_fcc_features *f)
{
	u32 centre_mag = 0, bg_static = 0, moving = 0, energy = 0;
	s32 ex = 0, ey = 0;
	int bx, by;

	for (by = 0; by < VREX_FCC_MBY; by++) {
		for (bx = 0; bx < VREX_FCC_MBX; bx++) {
			int m = by * VREX_FCC_MBX + bx;
			int dx = mv->dx[m], dy = mv->dy[m];
			u32 e;

			/* Vectors outside the search window are not from this unit: clamp. */
			dx = dx < -VREX_FCC_SEARCH ? -VREX_FCC_SEARCH :
			     dx > VREX_FCC_SEARCH ? VREX_FCC_SEARCH : dx;
			dy = dy < -VREX_FCC_SEARCH ? -VREX_FCC_SEARCH :
			     dy > VREX_FCC_SEARCH ? VREX_FCC_SEARCH : dy;
			e = (u32)(dx * dx + dy * dy);

			if (e)
				moving++;
			if (fcc_is_centre(bx, by))
				centre_mag += fcc_mag16[e];
			else if (!e)
				bg_static++;

			/* Offsets of the block centre from the grid centre, in grid pixels. */
			energy += e;
			ex += (s32)e * (bx * VREX_FCC_MB + VREX_FCC_MB / 2 - VREX_FCC_W / 2);
			ey += (s32)e * (by * VREX_FCC_MB + VREX_FCC_MB / 2 - VREX_FCC_H / 2);
		}
	}

	f->centre_motion = centre_mag / FCC_CENTRE_MBS;
	f->static_ratio = bg_static * 1000 / FCC_BACKGROUND_MBS;
	f->moving_blocks = moving;
	/* |ex| <= 6144 * 60, so the scaled numerators stay well inside s32. */
	f->roi_dx = energy ? ex * 1000 / ((s32)energy * (VREX_FCC_W / 2)) : 0;
	f->roi_dy = energy ? ey * 1000 / ((s32)energy * (VREX_FCC_H / 2)) : 0;
}

void vrex_fcc_region_motion(const struct vrex_fcc_motion *mv, u8 motion[VREX_FCC_REGIONS])
{
	int r;

	for (r = 0; r < VREX_FCC_REGIONS; r++) {
		int bx0 = (r % 4) * VREX_FCC_REGION_MBX, by0 = (r / 4) * VREX_FCC_REGION_MBY;
		u32 sum = 0;
		int bx, by;

		for (by = by0; by < by0 + VREX_FCC_REGION_MBY; by++) {
			for (bx = bx0; bx < bx0 + VREX_FCC_REGION_MBX; bx++) {
				int m = by * VREX_FCC_MBX + bx;
				int dx = mv->dx[m], dy = mv->dy[m];

				dx = dx < -VREX_FCC_SEARCH ? -VREX_FCC_SEARCH :
				     dx > VREX_FCC_SEARCH ? VREX_FCC_SEARCH : dx;
				dy = dy < -VREX_FCC_SEARCH ? -VREX_FCC_SEARCH :
				     dy > VREX_FCC_SEARCH ? VREX_FCC_SEARCH : dy;
				sum += fcc_mag16[dx * dx + dy * dy];
			}
		}
		/* The smallest magnitude is 16 > 12 blocks: one moving block reads >= 1. */
		motion[r] = (u8)(sum / (VREX_FCC_REGION_MBX * VREX_FCC_REGION_MBY));
	}
}

static void fcc_set_bit(struct vrex_fp *fp, u32 bit)
{
	fp->w[bit / 64] |= 1ull << (bit % 64);
}

static void fcc_thermometer(struct vrex_fp *fp, u32 first_bit, u32 level)
{
	u32 i;

	for (i = 0; i < level; i++)
		fcc_set_bit(fp, first_bit + i);
}

static u32 fcc_level_u(u32 v, const u16 *steps)
{
	u32 i, level = 0;

	for (i = 0; i < FCC_THERMO_BITS; i++)
		level += v >= steps[i];
	return level;
}

static u32 fcc_level_s(s32 v, const s16 *steps)
{
	u32 i, level = 0;

	for (i = 0; i < FCC_THERMO_BITS; i++)
		level += v >= steps[i];
	return level;
}

/* xorshift32: the appearance projection weights, regenerated identically on every call. */
static u32 fcc_prng(u32 *s)
{
	u32 x = *s;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*s = x;
	return x;
}

/*
 * Appearance: one sign random projection (SimHash) per bit over the 192
 * mean-removed 8x8 block means. Each bit's +-1 weights come from its own
 * xorshift stream, so bits are independent hyperplanes and the expected
 * Hamming distance is FCC_APPEARANCE_BITS * angle / pi. Mean removal (and the
 * sign) make the bits invariant to global brightness and contrast changes.
 */
static void fcc_appearance(const struct vrex_fcc_image *cur, struct vrex_fp *fp)
{
	u8 mean[VREX_FCC_NMB];
	s32 total = 0;
	u32 bit;
	int bx, by, i, j;

	for (by = 0; by < VREX_FCC_MBY; by++) {
		for (bx = 0; bx < VREX_FCC_MBX; bx++) {
			const u8 *p = &cur->pix[by * VREX_FCC_MB * VREX_FCC_W + bx * VREX_FCC_MB];
			u32 sum = 0;

			for (j = 0; j < VREX_FCC_MB; j++, p += VREX_FCC_W)
				for (i = 0; i < VREX_FCC_MB; i++)
					sum += p[i];
			mean[by * VREX_FCC_MBX + bx] = (u8)((sum + 32) >> 6);
			total += (s32)((sum + 32) >> 6);
		}
	}

	for (bit = 0; bit < FCC_APPEARANCE_BITS; bit++) {
		u32 state = FCC_APPEARANCE_SEED ^ ((bit + 1) * 0x9e3779b9u);
		u32 signs = 0;
		s32 acc = 0;

		for (i = 0; i < VREX_FCC_NMB; i++) {
			/* Mean scaled by NMB minus the total: mean removal, no rounding. */
			s32 v = (s32)mean[i] * VREX_FCC_NMB - total;
			s32 neg;

			if (!(i & 31))
				signs = fcc_prng(&state);
			neg = -(s32)(signs & 1);
			acc += (v ^ neg) - neg;
			signs >>= 1;
		}
		if (acc > 0)
			fcc_set_bit(fp, FCC_BIT_APPEARANCE + bit);
	}
}

void vrex_fcc_encode(const struct vrex_fcc_image *cur, const struct vrex_fcc_features *f,
		     struct vrex_fp *fp)
{
	u32 background_motion = f->static_ratio >= 1000 ? 0 : 1000 - f->static_ratio;

	vrex_memset(fp, 0, sizeof(*fp));
	fcc_thermometer(fp, FCC_BIT_CENTRE, fcc_level_u(f->centre_motion, fcc_centre_steps));
	fcc_thermometer(fp, FCC_BIT_BACKGROUND,
			fcc_level_u(background_motion, fcc_background_steps));
	fcc_thermometer(fp, FCC_BIT_ROI_X, fcc_level_s(f->roi_dx, fcc_roi_steps));
	fcc_thermometer(fp, FCC_BIT_ROI_Y, fcc_level_s(f->roi_dy, fcc_roi_steps));
	fcc_appearance(cur, fp);
}

int vrex_fcc_fingerprint(const u8 *luma, u32 width, u32 height, u32 stride,
			 const struct vrex_fcc_image *prev, struct vrex_fcc_image *cur,
			 struct vrex_fcc_motion *mv, struct vrex_fp *fp,
			 struct vrex_fcc_features *feat)
{
	int ret;

	if (!cur || !mv || !fp || !feat || prev == cur)
		return VREX_EINVAL;

	ret = vrex_fcc_downscale(luma, width, height, stride, cur);
	if (ret)
		return ret;

	if (prev)
		vrex_fcc_motion(cur, prev, mv);
	else
		vrex_memset(mv, 0, sizeof(*mv));

	vrex_fcc_features(mv, feat);
	vrex_fcc_encode(cur, feat, fp);
	return VREX_OK;
}
