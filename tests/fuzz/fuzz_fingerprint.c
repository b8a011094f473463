/* SPDX-License-Identifier: MIT */
/*
 * FCC fingerprint on arbitrary geometry and content: width, height and stride come from the input
 * (including invalid ones), the plane is filled from the rest. Checks: invalid geometry is refused
 * without touching the outputs, valid input is deterministic, the distance of a fingerprint to itself
 * is zero, and nothing reads outside the plane (ASan guards the exact-size heap copy).
 */
#include <stdlib.h>
#include <string.h>

#include "fcc_fingerprint.h"
#include "fuzz_input.h"

static struct vrex_fcc_image prev, cur, cur2;
static struct vrex_fcc_motion mv;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_input in = { data, size, 0 };
	u32 width = (u32)fuzz_take(&in, 2) % 1100;
	u32 height = (u32)fuzz_take(&in, 2) % 700;
	u32 pad = (u32)fuzz_take(&in, 1);
	int have_prev = (int)(fuzz_take(&in, 1) & 1);
	u32 stride = width + pad - 8; /* may be < width: must be refused */
	size_t plane;
	u8 *luma;
	struct vrex_fp fp = { { 0x1111, 0x2222 } }, fp2;
	struct vrex_fcc_features feat, feat2;
	int rc;

	if (stride > 2000)
		stride = width;
	plane = height ? (size_t)(height - 1) * stride + width : 0;
	luma = malloc(plane ? plane : 1);
	if (!luma)
		return 0;
	for (size_t i = 0; i < plane; i++)
		luma[i] = in.pos < in.size ? data[in.pos++] : (u8)(i * 31u);

	rc = vrex_fcc_fingerprint(plane ? luma : NULL, width, height, stride, have_prev ? &prev : NULL, &cur,
				  &mv, &fp, &feat);
	if (rc) {
		/* refused: the fingerprint must be untouched */
		if (fp.w[0] != 0x1111 || fp.w[1] != 0x2222)
			abort();
	} else {
		rc = vrex_fcc_fingerprint(luma, width, height, stride, have_prev ? &prev : NULL, &cur2, &mv,
					  &fp2, &feat2);
		if (rc || !vrex_fp_equal(&fp, &fp2) || memcmp(&cur, &cur2, sizeof(cur)) ||
		    memcmp(&feat, &feat2, sizeof(feat)) || vrex_fp_distance(&fp, &fp2))
			abort();
		if (feat.static_ratio > 1000)
			abort();
		prev = cur;
	}
	free(luma);
	return 0;
}
