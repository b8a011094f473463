# Devices of the vrex arm64 guests (scripts/qemu-build.sh: --with-devices-aarch64=vrex):
# the virt board (GICv3, PL011, SMMUv3, PCIe host, platform bus) and the V-Rex engine on it.
CONFIG_ARM_VIRT=y
CONFIG_VREX_MMIO=y
CONFIG_VREX_PCI=y
# target/arm always links the M-profile and semihosting helpers (qemu 7.2 fails to link
# qemu-system-aarch64 without them: armv7m_nvic_*, do_common_semihosting undefined).
CONFIG_ARM_V7M=y
CONFIG_SEMIHOSTING=y
CONFIG_ARM_COMPATIBLE_SEMIHOSTING=y
