/* SPDX-License-Identifier: MIT */
/*
 * VREX_API marks the public API of libvrex-hal. The library is built with -fvisibility=hidden and
 * -fvisibility-inlines-hidden plus a linker version script (hal/libvrex-hal.map), so only what is
 * marked here (and named by the script) is exported; tests/hal/exported-symbols.txt records the
 * list and the symbols test fails when it changes (docs/hal.md "ABI policy").
 */
#ifndef VREX_EXPORT_H
#define VREX_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define VREX_API __attribute__((visibility("default")))
/* Members of a VREX_API class that are not API (private helpers, pimpl structs). */
#define VREX_LOCAL __attribute__((visibility("hidden")))
#else
#define VREX_API
#define VREX_LOCAL
#endif

#endif /* VREX_EXPORT_H */
