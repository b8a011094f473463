/* SPDX-License-Identifier: MIT */
/* A byte cursor over a fuzzer input: takes fixed-width values and yields zeros once exhausted. */
#ifndef VREX_FUZZ_INPUT_H
#define VREX_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>

struct fuzz_input {
	const uint8_t *data;
	size_t size;
	size_t pos;
};

static inline uint64_t fuzz_take(struct fuzz_input *in, unsigned int bytes)
{
	uint64_t v = 0;

	for (unsigned int i = 0; i < bytes; i++) {
		uint64_t b = in->pos < in->size ? in->data[in->pos++] : 0;

		v |= b << (8 * i);
	}
	return v;
}

static inline int fuzz_done(const struct fuzz_input *in)
{
	return in->pos >= in->size;
}

#endif
