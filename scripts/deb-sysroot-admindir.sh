#!/usr/bin/env bash
# A dpkg database describing an arm64 sysroot of scripts/arm64-sysroot.sh, for dpkg-shlibdeps in
# cross builds of the packages (debian/rules: --admindir). The sysroot's packages were unpacked, not
# installed: this makes their status, file lists (with the sysroot's prefix, as dpkg-shlibdeps
# finds the libraries there) and symbols/shlibs files from the same .debs, so the cross-built
# packages depend on the libraries' real package names and versions (libdrm2 (>= ...), ...).
#
#   deb-sysroot-admindir.sh SYSROOT      prints the database directory (SYSROOT/.dpkg-admin)
set -euo pipefail

sysroot=${1:?usage: deb-sysroot-admindir.sh SYSROOT}
debs=$(dirname "$sysroot")/debs
list=$sysroot/.vrex-debs
[[ -f $list ]] || {
	echo "deb-sysroot-admindir: $list missing (a sysroot made by scripts/arm64-sysroot.sh)" >&2
	exit 1
}
admin=$sysroot/.dpkg-admin
if [[ -f $admin/.complete ]]; then
	echo "$admin"
	exit 0
fi

rm -rf "$admin.tmp"
mkdir -p "$admin.tmp/info" "$admin.tmp/updates"
# The multiarch layout: info files of Multi-Arch: same packages are named <package>:<arch>.*.
echo 1 >"$admin.tmp/info/format"
: >"$admin.tmp/available"
ctl=$(mktemp -d)
trap 'rm -rf "$ctl"' EXIT
while read -r f; do
	deb=$debs/$f
	pkg=$(dpkg-deb -f "$deb" Package)
	arch=$(dpkg-deb -f "$deb" Architecture)
	ma=$(dpkg-deb -f "$deb" Multi-Arch)
	# dpkg names the info files of Multi-Arch: same packages with their architecture.
	name=$pkg
	[[ $ma == same ]] && name=$pkg:$arch
	{
		dpkg-deb -f "$deb" | sed '/^Status:/d' | sed '1a Status: install ok installed'
		echo
	} >>"$admin.tmp/status"
	rm -rf "${ctl:?}"/*
	dpkg-deb -e "$deb" "$ctl"
	for part in symbols shlibs; do
		[[ -f $ctl/$part ]] && cp "$ctl/$part" "$admin.tmp/info/$name.$part"
	done
	# Paths as the sysroot holds them; /lib/... also under /usr/lib/... (merged /usr, as there).
	dpkg-deb --fsys-tarfile "$deb" | tar -t | sed -e 's|^\./|/|' -e 's|/$||' | grep -v '^/\?$' |
		while read -r p; do
			echo "$sysroot$p"
			case $p in /lib/* | /bin/* | /sbin/*) echo "$sysroot/usr$p" ;; esac
		done >"$admin.tmp/info/$name.list"
done <"$list"
touch "$admin.tmp/.complete"
rm -rf "$admin"
mv "$admin.tmp" "$admin"
echo "$admin"
