# Cross-building vrex user space for arm64 (Jetson Orin, RK3588) on an amd64 Debian 12 host:
#
#   cmake -S . -B build-arm64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake \
#         -DVREX_ARM64_SYSROOT=$(scripts/arm64-sysroot.sh) -DVREX_BENCH=OFF
#
# (scripts/cross-arm64.sh does exactly this.) The compiler is Debian's aarch64-linux-gnu-gcc/g++
# with its own C library and libstdc++ (libc6-dev-arm64-cross); VREX_ARM64_SYSROOT is a tree of
# unpacked :arm64 -dev packages (libdrm, libudev, Boost, GoogleTest, fmt, FFmpeg, ...) made by
# scripts/arm64-sysroot.sh. Any tree with the Debian multiarch layout works, e.g. / on a host with
# `dpkg --add-architecture arm64` and the :arm64 -dev packages installed.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

if(NOT VREX_ARM64_SYSROOT AND DEFINED ENV{VREX_ARM64_SYSROOT})
  set(VREX_ARM64_SYSROOT "$ENV{VREX_ARM64_SYSROOT}")
endif()
if(NOT VREX_ARM64_SYSROOT OR NOT IS_DIRECTORY "${VREX_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu")
  message(FATAL_ERROR "toolchain-aarch64: set VREX_ARM64_SYSROOT to an arm64 sysroot "
    "(scripts/arm64-sysroot.sh prints one); got '${VREX_ARM64_SYSROOT}'")
endif()
set(VREX_ARM64_SYSROOT "${VREX_ARM64_SYSROOT}" CACHE PATH "arm64 sysroot with the :arm64 -dev packages")
# try_compile() projects read this file again: hand them the sysroot.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES VREX_ARM64_SYSROOT)

# Libraries, headers and CMake/pkg-config packages come from the sysroot only; programs (pkg-config,
# ccache) from the host.
set(CMAKE_FIND_ROOT_PATH "${VREX_ARM64_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${VREX_ARM64_SYSROOT}")
set(ENV{PKG_CONFIG_LIBDIR}
  "${VREX_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig:${VREX_ARM64_SYSROOT}/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")

# The libraries vrex links against pull in others (libavcodec -> libdav1d, libx264, ...): the linker
# resolves those through the sysroot, never the host's amd64 ones.
set(_vrex_arm64_rpath_link
  "-Wl,-rpath-link,${VREX_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu -Wl,-rpath-link,${VREX_ARM64_SYSROOT}/usr/lib")
set(CMAKE_EXE_LINKER_FLAGS_INIT "${_vrex_arm64_rpath_link}")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "${_vrex_arm64_rpath_link}")
set(CMAKE_MODULE_LINKER_FLAGS_INIT "${_vrex_arm64_rpath_link}")

# GoogleTest lists a binary's tests by running it, which an aarch64 binary cannot do on this host
# during the build: list them when ctest runs (on the board, or in the arm64 QEMU guest).
set(CMAKE_GTEST_DISCOVER_TESTS_DISCOVERY_MODE PRE_TEST)
