# Devices of the vrex arm64 guests (scripts/qemu-build.sh: --with-devices-aarch64=vrex):
# the virt board (GICv3, PL011, SMMUv3, PCIe host, platform bus) and the V-Rex engine on it.
CONFIG_ARM_VIRT=y
CONFIG_VREX_MMIO=y
CONFIG_VREX_PCI=y
