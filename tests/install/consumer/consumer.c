/* The C ABI against the installed package: the version of the library loaded is the header's, and
 * an fp8 geometry with per-head scales on an emulated device sized by the options. */
#include <stdio.h>
#include <vrex/vrex_hal.h>

int main(void)
{
	struct vrex_hal_device_options o = { .struct_size = sizeof(o), .emu_banks = 4,
					     .emu_bank_size = 64ull << 20 };
	struct vrex_hal_geometry g = { 80, 8, 128, VREX_HAL_FP8_E4M3, 16, VREX_HAL_SCALES_PER_HEAD };
	struct vrex_hal_stats st = { .struct_size = sizeof(st) };
	vrex_hal_allocator *alloc = NULL;
	vrex_hal_device *dev = NULL;

	if (vrex_hal_version() != VREX_HAL_VERSION) {
		fprintf(stderr, "consumer_c: library %#x, header %#x\n", vrex_hal_version(), VREX_HAL_VERSION);
		return 1;
	}
	if (vrex_hal_device_open_with("emulated", &o, &dev) ||
	    vrex_hal_allocator_create(dev, &g, &alloc) || vrex_hal_get_stats(alloc, &st)) {
		fprintf(stderr, "consumer_c: %s\n", vrex_hal_last_error());
		return 2;
	}
	printf("consumer_c: ABI %u.%u, fp8 block of %llu bytes, %u banks\n", VREX_HAL_VERSION_MAJOR,
	       VREX_HAL_VERSION_MINOR, (unsigned long long)vrex_hal_allocator_block_bytes(alloc), st.bank_count);
	vrex_hal_allocator_destroy(alloc);
	vrex_hal_device_close(dev);
	return 0;
}
