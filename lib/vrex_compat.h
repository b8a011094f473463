/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * The one place where lib/ learns about its host. The reference model is
 * compiled into vrex_sim.ko and into libvrex-hal; everything it needs from the
 * environment (fixed-width types, popcount, byte fill/copy) comes from here so
 * that the model itself stays free of libc and kernel APIs.
 */
#ifndef VREX_COMPAT_H
#define VREX_COMPAT_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <asm/byteorder.h>
#include <linux/bitops.h>
#include <linux/string.h>

#define vrex_popcount64(x) hweight64((u64)(x))
#define vrex_memset(d, c, n) memset((d), (c), (n))
#define vrex_memcpy(d, s, n) memcpy((d), (s), (n))
#define vrex_le32_to_cpu(x) le32_to_cpu(x)
#define vrex_le64_to_cpu(x) le64_to_cpu(x)
#define vrex_cpu_to_le32(x) cpu_to_le32(x)
#define vrex_cpu_to_le64(x) cpu_to_le64(x)
#else
#include <stddef.h>
#include <stdint.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int8_t s8;
typedef int16_t s16;
typedef int32_t s32;
typedef int64_t s64;

#define vrex_popcount64(x) ((u32)__builtin_popcountll(x))
/* The builtins expand inline or to the compiler's own helpers: no libc dependency is declared. */
#define vrex_memset(d, c, n) __builtin_memset((d), (c), (n))
#define vrex_memcpy(d, s, n) __builtin_memcpy((d), (s), (n))
/* Records in device memory are little endian (vrex_regs.h). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define vrex_le32_to_cpu(x) __builtin_bswap32(x)
#define vrex_le64_to_cpu(x) __builtin_bswap64(x)
#else
#define vrex_le32_to_cpu(x) ((u32)(x))
#define vrex_le64_to_cpu(x) ((u64)(x))
#endif
#define vrex_cpu_to_le32(x) vrex_le32_to_cpu(x)
#define vrex_cpu_to_le64(x) vrex_le64_to_cpu(x)
#endif

#define VREX_NIL 0xffffffffu

/*
 * Error codes of the model. They are numerically equal to the Linux errno
 * values so the kernel returns -code and the HAL builds std::errc from the
 * same number; the model never includes errno.h.
 */
#define VREX_OK 0
#define VREX_ENOENT 2
#define VREX_E2BIG 7
#define VREX_ENOMEM 12
#define VREX_EBUSY 16
#define VREX_EEXIST 17
#define VREX_EINVAL 22
#define VREX_ENOSPC 28
#define VREX_ERANGE 34

#endif /* VREX_COMPAT_H */
