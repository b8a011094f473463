#!/usr/bin/env bash
# Kconfig front end for the out-of-tree build: writes .config (read by kernel/Kbuild) and
# build/vrex_config.cmake (read by CMakeLists.txt) from the same symbols.
#   kconfig.sh defconfig | menuconfig | olddefconfig | cmake
set -euo pipefail
cd "$(dirname "$0")/.."
PY=/usr/bin/python3	# Debian's interpreter: python3-kconfiglib lives in its dist-packages
export srctree=$PWD KCONFIG_CONFIG=.config

case ${1:-defconfig} in
defconfig)
	rm -f .config
	$PY - <<'PYEOF'
import kconfiglib
k = kconfiglib.Kconfig("scripts/Kconfig.standalone", warn_to_stderr=False)
k.syms["DRM_ACCEL_VREX"].set_value(1)  # m: out-of-tree builds are modules
k.write_config(".config", header="# vrex defconfig (scripts/kconfig.sh)\n")
PYEOF
	;;
menuconfig)
	$PY -m menuconfig scripts/Kconfig.standalone
	;;
olddefconfig)
	$PY - <<'PYEOF'
import kconfiglib
k = kconfiglib.Kconfig("scripts/Kconfig.standalone", warn_to_stderr=False)
k.load_config(".config")
k.write_config(".config")
PYEOF
	;;
cmake) ;;
*)
	echo "usage: $0 defconfig|menuconfig|olddefconfig|cmake" >&2
	exit 2
	;;
esac

mkdir -p build
# Replaced only when it changes: CMakeLists.txt includes it, so a new timestamp alone would make
# every build re-run CMake (scripts/cross-arm64.sh calls this on each qemu-test run).
{
	echo "# generated from .config by scripts/kconfig.sh"
	grep -E '^CONFIG_DRM_ACCEL_VREX' .config | sed -E 's/^CONFIG_([A-Z0-9_]+)=(.*)$/set(VREX_KCONFIG_\1 \2)/'
} >build/vrex_config.cmake.$$
if cmp -s build/vrex_config.cmake.$$ build/vrex_config.cmake; then
	rm build/vrex_config.cmake.$$
else
	mv build/vrex_config.cmake.$$ build/vrex_config.cmake
fi
echo "kconfig: .config and build/vrex_config.cmake written"
