/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * FCC fingerprint unit: downscale a luma plane to the fixed working grid,
 * estimate 8x8 macroblock motion against the stream's previous frame, derive
 * the scalar features and encode them, with appearance bits, into a 128-bit
 * locality-sensitive fingerprint. Bit layout: docs/hardware.md.
 *
 * The working grid is fixed so the unit needs no allocation and its cost does
 * not grow with the input resolution beyond the sampling pass.
 */
#ifndef VREX_FCC_FINGERPRINT_H
#define VREX_FCC_FINGERPRINT_H

#include "vrex_compat.h"
#include "vrex_fp.h"

#define VREX_FCC_W 128
#define VREX_FCC_H 96
#define VREX_FCC_MB 8
#define VREX_FCC_MBX (VREX_FCC_W / VREX_FCC_MB)
#define VREX_FCC_MBY (VREX_FCC_H / VREX_FCC_MB)
#define VREX_FCC_NMB (VREX_FCC_MBX * VREX_FCC_MBY)
#define VREX_FCC_SEARCH 4
#define VREX_FCC_MIN_DIM 64
#define VREX_FCC_MAX_DIM 8192

/* Downscaled luma on the working grid. */
struct vrex_fcc_image {
	u8 pix[VREX_FCC_H * VREX_FCC_W];
};

/* Per-macroblock motion vectors (pixels on the working grid) and best SAD. */
struct vrex_fcc_motion {
	s8 dx[VREX_FCC_NMB];
	s8 dy[VREX_FCC_NMB];
	u16 sad[VREX_FCC_NMB];
};

/*
 * Region motion: the 16 SHIE regions are a 4 x 4 grid over the frame, region
 * r = (r / 4, r % 4); each covers 4 x 3 macroblocks of the working grid.
 */
#define VREX_FCC_REGIONS 16
#define VREX_FCC_REGION_MBX (VREX_FCC_MBX / 4)
#define VREX_FCC_REGION_MBY (VREX_FCC_MBY / 4)

struct vrex_fcc_features {
	u32 centre_motion;	/* mean |mv| of centre macroblocks, 1/16 px units */
	u32 static_ratio;	/* background macroblocks without motion, per mille */
	s32 roi_dx;		/* motion-energy centroid minus centre, per mille of half width */
	s32 roi_dy;		/* same, per mille of half height */
	u32 moving_blocks;	/* macroblocks with a non-zero vector */
};

/*
 * Samples @luma (width x height, @stride bytes per row) onto the working grid.
 * Returns VREX_EINVAL for a NULL plane, a dimension outside
 * [VREX_FCC_MIN_DIM, VREX_FCC_MAX_DIM] or a stride smaller than the width.
 */
int vrex_fcc_downscale(const u8 *luma, u32 width, u32 height, u32 stride,
		       struct vrex_fcc_image *out);

/* Bounded (+-VREX_FCC_SEARCH) block matching of @cur against @prev. */
void vrex_fcc_motion(const struct vrex_fcc_image *cur, const struct vrex_fcc_image *prev,
		     struct vrex_fcc_motion *mv);

void vrex_fcc_features(const struct vrex_fcc_motion *mv, struct vrex_fcc_features *f);

/*
 * Per SHIE region, the mean vector magnitude of its 12 macroblocks in 1/16 grid
 * px (the unit of centre_motion), rounded down: 0 iff no block of the region
 * moved, at most 90 (|(4, 4)|). What a consumer compares a threshold against
 * to keep a moving region from reusing an older frame's KV.
 */
void vrex_fcc_region_motion(const struct vrex_fcc_motion *mv, u8 motion[VREX_FCC_REGIONS]);

/* Encodes the features and @cur's appearance into @fp. Deterministic. */
void vrex_fcc_encode(const struct vrex_fcc_image *cur, const struct vrex_fcc_features *f,
		     struct vrex_fp *fp);

/*
 * Whole unit for one frame: downscale into @cur, motion against @prev (NULL for
 * a stream's first frame: no motion, fully static), features, encode.
 * @mv is caller-provided scratch so the unit never needs a large stack.
 */
int vrex_fcc_fingerprint(const u8 *luma, u32 width, u32 height, u32 stride,
			 const struct vrex_fcc_image *prev, struct vrex_fcc_image *cur,
			 struct vrex_fcc_motion *mv, struct vrex_fp *fp,
			 struct vrex_fcc_features *feat);

#endif /* VREX_FCC_FINGERPRINT_H */
