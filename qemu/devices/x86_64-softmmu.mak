# Devices of the vrex amd64 guests (scripts/qemu-build.sh: --with-devices-x86_64=vrex):
# q35 with PCIe root ports (hot-plug slots), the Intel IOMMU, the V-Rex PCIe function.
CONFIG_Q35=y
CONFIG_PCIE_PORT=y
CONFIG_VTD=y
CONFIG_VREX_PCI=y
