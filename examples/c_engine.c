/* SPDX-License-Identifier: MIT */
/*
 * A C engine on the libvrex-hal C ABI: per frame, fingerprint the luma plane, store one KV block per
 * region, read back last frame's blocks. Exits non-zero on any unexpected status.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vrex/vrex_hal.h>

#define W 160
#define H 120

static int check(vrex_hal_status s, const char *what)
{
	if (s != VREX_HAL_OK) {
		fprintf(stderr, "c_engine: %s: %s\n", what, vrex_hal_strerror(s));
		return 1;
	}
	return 0;
}

int main(void)
{
	static uint8_t luma[W * H];
	struct vrex_hal_geometry geom = { 2, 2, 64, VREX_HAL_FP16, 16, 0 };
	struct vrex_hal_stats st = { .struct_size = sizeof(st) };
	vrex_hal_allocator *alloc = NULL;
	vrex_hal_device *dev = NULL;
	vrex_hal_stream *s = NULL;
	unsigned int hits = 0;
	int frame, rc = 1;

	if (check(vrex_hal_device_open(NULL, &dev), "open"))
		return 1;
	printf("c_engine: backend %s\n", vrex_hal_device_backend(dev));
	if (check(vrex_hal_allocator_create(dev, &geom, &alloc), "allocator"))
		goto err_dev;
	if (check(vrex_hal_stream_create(alloc, 0, 0, &s), "stream"))
		goto err_alloc;

	for (frame = 0; frame < 8; frame++) {
		struct vrex_hal_frame_info fi;
		uint32_t region, released;

		for (int i = 0; i < W * H; i++)
			luma[i] = (uint8_t)((i % W + frame * 2) ^ (i / W));
		if (check(vrex_hal_begin_frame(s, luma, W, H, W, &fi), "begin_frame"))
			goto err_stream;
		for (region = 0; region < 4; region++) {
			struct vrex_hal_block b;
			struct vrex_hal_retrieval r;

			if (check(vrex_hal_allocate(s, region, 0, &b), "allocate"))
				goto err_stream;
			memset(b.data, frame + 1, b.size);
			if (frame == 0)
				continue;
			if (check(vrex_hal_retrieve_temporal(s, region, -1, &r), "retrieve"))
				goto err_stream;
			if (r.hit && ((uint8_t *)r.block.data)[0] == frame)
				hits++;
		}
		if (check(vrex_hal_end_frame(s, &released), "end_frame"))
			goto err_stream;
	}
	if (check(vrex_hal_get_stats(alloc, &st), "stats"))
		goto err_stream;
	printf("c_engine: %u hits of previous-frame blocks, %llu resident blocks\n", hits,
	       (unsigned long long)st.resident_blocks);
	rc = hits == 7 * 4 ? 0 : 1;
err_stream:
	vrex_hal_stream_destroy(s);
err_alloc:
	vrex_hal_allocator_destroy(alloc);
err_dev:
	vrex_hal_device_close(dev);
	return rc;
}
