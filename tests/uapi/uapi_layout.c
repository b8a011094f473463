/* SPDX-License-Identifier: MIT */
/*
 * Compiles uapi/drm/vrex_accel.h as C and as C++ (this file is built twice) and proves every struct is a
 * multiple of 8 bytes with no implicit padding: the sum of the member sizes equals the struct size, so
 * 32- and 64-bit user space see one layout and no hole can leak kernel stack.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <drm/vrex_accel.h>

static int passed;
static int failed;

static void check(const char *name, size_t size, size_t members)
{
	if (size % 8 == 0 && size == members) {
		passed++;
	} else {
		failed++;
		fprintf(stderr, "%s: sizeof %zu, members %zu\n", name, size, members);
	}
}

#define M(s, f) sizeof(((struct s *)0)->f)
#define CHECK(s, sum) check(#s, sizeof(struct s), (sum))

int main(void)
{
	CHECK(drm_vrex_query, M(drm_vrex_query, param) + M(drm_vrex_query, size) + M(drm_vrex_query, ptr));
	CHECK(drm_vrex_device_info,
	      M(drm_vrex_device_info, hw_id) + M(drm_vrex_device_info, hw_version) +
		      M(drm_vrex_device_info, caps) + M(drm_vrex_device_info, bank_count) +
		      M(drm_vrex_device_info, bank_size) + M(drm_vrex_device_info, group_banks) +
		      M(drm_vrex_device_info, max_streams) + M(drm_vrex_device_info, shie_capacity) +
		      M(drm_vrex_device_info, block_capacity) + M(drm_vrex_device_info, zombie_frames) +
		      M(drm_vrex_device_info, max_batch) + M(drm_vrex_device_info, fcc_min_dim) +
		      M(drm_vrex_device_info, fcc_max_dim) + M(drm_vrex_device_info, simulated) +
		      M(drm_vrex_device_info, pad));
	CHECK(drm_vrex_bank_info,
	      M(drm_vrex_bank_info, bank_count) + M(drm_vrex_bank_info, pad) + M(drm_vrex_bank_info, bo_bytes) +
		      M(drm_vrex_bank_info, kv_bytes) + M(drm_vrex_bank_info, kv_blocks) +
		      M(drm_vrex_bank_info, group_owned) + M(drm_vrex_bank_info, imported_bytes) +
		      M(drm_vrex_bank_info, imported_bos) + M(drm_vrex_bank_info, imported_kv_blocks) +
		      M(drm_vrex_bank_info, imported_kv_bytes));
	/* The imported_* tail was appended: an older caller's 1544-byte struct is a prefix. */
	check("drm_vrex_bank_info tail", offsetof(struct drm_vrex_bank_info, imported_bytes), 1544);
	CHECK(drm_vrex_bo_create,
	      M(drm_vrex_bo_create, size) + M(drm_vrex_bo_create, bank_mask) + M(drm_vrex_bo_create, flags) +
		      M(drm_vrex_bo_create, handle) + M(drm_vrex_bo_create, bank) + M(drm_vrex_bo_create, pad) +
		      M(drm_vrex_bo_create, bo_gen));
	/* bo_gen was appended (vrex 1.2): an older caller's 32-byte struct is a prefix. */
	check("drm_vrex_bo_create tail", offsetof(struct drm_vrex_bo_create, bo_gen), 32);
	CHECK(drm_vrex_bo_mmap_offset, M(drm_vrex_bo_mmap_offset, handle) + M(drm_vrex_bo_mmap_offset, pad) +
					       M(drm_vrex_bo_mmap_offset, offset));
	CHECK(drm_vrex_stream_create, M(drm_vrex_stream_create, flags) + M(drm_vrex_stream_create, pool) +
					      M(drm_vrex_stream_create, stream) + M(drm_vrex_stream_create, pad));
	CHECK(drm_vrex_stream_destroy, M(drm_vrex_stream_destroy, stream) + M(drm_vrex_stream_destroy, pad));
	CHECK(drm_vrex_frame_submit,
	      M(drm_vrex_frame_submit, stream) + M(drm_vrex_frame_submit, handle) +
		      M(drm_vrex_frame_submit, offset) + M(drm_vrex_frame_submit, width) +
		      M(drm_vrex_frame_submit, height) + M(drm_vrex_frame_submit, stride) +
		      M(drm_vrex_frame_submit, flags) + M(drm_vrex_frame_submit, user_data) +
		      M(drm_vrex_frame_submit, fp) + M(drm_vrex_frame_submit, frame) +
		      M(drm_vrex_frame_submit, group) + M(drm_vrex_frame_submit, bank_first) +
		      M(drm_vrex_frame_submit, bank_count) + M(drm_vrex_frame_submit, result_flags) +
		      M(drm_vrex_frame_submit, centre_motion) + M(drm_vrex_frame_submit, static_ratio) +
		      M(drm_vrex_frame_submit, roi_dx) + M(drm_vrex_frame_submit, roi_dy) +
		      M(drm_vrex_frame_submit, pad) + M(drm_vrex_frame_submit, region_motion));
	/* region_motion was appended (vrex 1.5): an older caller's 96-byte struct is a prefix. */
	check("drm_vrex_frame_submit tail", offsetof(struct drm_vrex_frame_submit, region_motion), 96);
	CHECK(drm_vrex_shie_insert_item,
	      M(drm_vrex_shie_insert_item, fp) + M(drm_vrex_shie_insert_item, handle) +
		      M(drm_vrex_shie_insert_item, flags) + M(drm_vrex_shie_insert_item, offset) +
		      M(drm_vrex_shie_insert_item, length) + M(drm_vrex_shie_insert_item, region) +
		      M(drm_vrex_shie_insert_item, frame_offset) + M(drm_vrex_shie_insert_item, block) +
		      M(drm_vrex_shie_insert_item, result) + M(drm_vrex_shie_insert_item, bo_gen) +
		      M(drm_vrex_shie_insert_item, block_gen));
	check("drm_vrex_shie_insert_item tail", offsetof(struct drm_vrex_shie_insert_item, bo_gen), 56);
	check("drm_vrex_shie_insert_item 1.3 tail",
	      offsetof(struct drm_vrex_shie_insert_item, block_gen), 64);
	CHECK(drm_vrex_shie_lookup_item,
	      M(drm_vrex_shie_lookup_item, fp) + M(drm_vrex_shie_lookup_item, kind) +
		      M(drm_vrex_shie_lookup_item, flags) + M(drm_vrex_shie_lookup_item, region) +
		      M(drm_vrex_shie_lookup_item, frame_offset) + M(drm_vrex_shie_lookup_item, radius) +
		      M(drm_vrex_shie_lookup_item, pad) + M(drm_vrex_shie_lookup_item, hit_flags) +
		      M(drm_vrex_shie_lookup_item, distance) + M(drm_vrex_shie_lookup_item, block) +
		      M(drm_vrex_shie_lookup_item, frame) + M(drm_vrex_shie_lookup_item, stream) +
		      M(drm_vrex_shie_lookup_item, handle) + M(drm_vrex_shie_lookup_item, offset) +
		      M(drm_vrex_shie_lookup_item, length) + M(drm_vrex_shie_lookup_item, found_fp) +
		      M(drm_vrex_shie_lookup_item, block_gen) +
		      M(drm_vrex_shie_lookup_item, max_candidates) +
		      M(drm_vrex_shie_lookup_item, candidate_count) +
		      M(drm_vrex_shie_lookup_item, candidates));
	check("drm_vrex_shie_lookup_item 1.3 tail",
	      offsetof(struct drm_vrex_shie_lookup_item, block_gen), 96);
	check("drm_vrex_shie_lookup_item 1.6 tail",
	      offsetof(struct drm_vrex_shie_lookup_item, max_candidates), 104);
	CHECK(drm_vrex_shie_candidate,
	      M(drm_vrex_shie_candidate, block) + M(drm_vrex_shie_candidate, frame) +
		      M(drm_vrex_shie_candidate, stream) + M(drm_vrex_shie_candidate, handle) +
		      M(drm_vrex_shie_candidate, offset) + M(drm_vrex_shie_candidate, length) +
		      M(drm_vrex_shie_candidate, found_fp) + M(drm_vrex_shie_candidate, block_gen) +
		      M(drm_vrex_shie_candidate, hit_flags) + M(drm_vrex_shie_candidate, distance));
	CHECK(drm_vrex_shie_batch, M(drm_vrex_shie_batch, stream) + M(drm_vrex_shie_batch, count) +
					   M(drm_vrex_shie_batch, elem_size) + M(drm_vrex_shie_batch, flags) +
					   M(drm_vrex_shie_batch, items));
	CHECK(drm_vrex_released_block,
	      M(drm_vrex_released_block, block) + M(drm_vrex_released_block, handle) +
		      M(drm_vrex_released_block, offset) + M(drm_vrex_released_block, length) +
		      M(drm_vrex_released_block, reason) + M(drm_vrex_released_block, pad) +
		      M(drm_vrex_released_block, bo_gen) + M(drm_vrex_released_block, block_gen));
	check("drm_vrex_released_block tail", offsetof(struct drm_vrex_released_block, bo_gen), 32);
	check("drm_vrex_released_block 1.3 tail",
	      offsetof(struct drm_vrex_released_block, block_gen), 40);
	CHECK(drm_vrex_shie_retire,
	      M(drm_vrex_shie_retire, stream) + M(drm_vrex_shie_retire, flags) +
		      M(drm_vrex_shie_retire, remove_count) + M(drm_vrex_shie_retire, released_cap) +
		      M(drm_vrex_shie_retire, elem_size) + M(drm_vrex_shie_retire, pad) +
		      M(drm_vrex_shie_retire, remove) + M(drm_vrex_shie_retire, released));
	CHECK(drm_vrex_stats, 12 * sizeof(__u64));
	CHECK(drm_vrex_stats_query,
	      M(drm_vrex_stats_query, size) + M(drm_vrex_stats_query, pad) + M(drm_vrex_stats_query, ptr));
	CHECK(drm_vrex_event_frame,
	      M(drm_vrex_event_frame, base) + M(drm_vrex_event_frame, user_data) + M(drm_vrex_event_frame, fp) +
		      M(drm_vrex_event_frame, stream) + M(drm_vrex_event_frame, frame) +
		      M(drm_vrex_event_frame, group) + M(drm_vrex_event_frame, pad));

	CHECK(drm_vrex_resv_params,
	      M(drm_vrex_resv_params, seed) + 6 * sizeof(__u32) + M(drm_vrex_resv_params, lut) +
		      M(drm_vrex_resv_params, pad));
	CHECK(drm_vrex_resv_head_create, sizeof(struct drm_vrex_resv_params) + 2 * sizeof(__u32));
	CHECK(drm_vrex_resv_head_destroy, 2 * sizeof(__u32));
	CHECK(drm_vrex_resv_hash, 4 * sizeof(__u32) + sizeof(__u64) + 2 * sizeof(__u32));
	CHECK(drm_vrex_resv_select_item, 4 * sizeof(__u32) + 2 * sizeof(__u64) + 8 * sizeof(__u32));
	CHECK(drm_vrex_resv_batch, 4 * sizeof(__u32) + M(drm_vrex_resv_batch, items));
	CHECK(drm_vrex_resv_truncate, 2 * sizeof(__u32));
	CHECK(drm_vrex_resv_stats, 7 * sizeof(__u64) + 4 * sizeof(__u32));
	/* Appended ids: the existing ones keep their numbers. */
	if (DRM_VREX_RESV_HEAD_CREATE != 11 || DRM_VREX_RESV_TRUNCATE != 15)
		failed++;
	else
		passed++;

	/* The ioctl numbers encode the struct size: a silent layout change would change them. */
	if (DRM_IOCTL_VREX_QUERY != DRM_IOWR(DRM_COMMAND_BASE + 0, struct drm_vrex_query) ||
	    DRM_VREX_RESERVED_10 != 10)
		failed++;
	else
		passed++;

	printf("uapi-layout (%s): %d passed, %d failed\n",
#ifdef __cplusplus
	       "C++",
#else
	       "C",
#endif
	       passed, failed);
	return failed ? 1 : 0;
}
