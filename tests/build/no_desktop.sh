#!/bin/sh
# no_desktop.sh SRCDIR BUILDDIR: builds berth with --disable-desktop and
# runs its tests as the minimal image would be built, on a machine without
# the X11 and FFmpeg development files. A mount namespace of its own hides
# their headers and pkg-config files (the libraries themselves stay: the
# desktop's programs the tests run need them), and the script first proves
# them out of reach; after the build, no program may link X11 or FFmpeg.
# So a desktop dependency that creeps into berthd, the gateway or the CLI
# fails here. Needs root (for the namespace). Prints what make check
# prints; its test-suite.log is in BUILDDIR.
set -eu
src=$(cd "$1" && pwd)
build=$2
if [ "${BERTH_NO_DESKTOP_INSIDE:-}" != yes ]; then
	[ "$(id -u)" -eq 0 ] || { echo "no_desktop.sh: needs root" >&2; exit 1; }
	mkdir -p "$build"
	build=$(cd "$build" && pwd)
	BERTH_NO_DESKTOP_INSIDE=yes exec unshare -m --propagation private \
		"$0" "$src" "$build"
fi

multiarch=$(gcc -print-multiarch)
hidden_pc='x11 xtst xext xfixes xdamage xrandr libavcodec libavformat libavutil libswscale libswresample'
pcdir=/usr/lib/$multiarch/pkgconfig
# The pkg-config directory without the desktop's files.
shadow=$(mktemp -d)
mount -t tmpfs tmpfs "$shadow"
cp -a "$pcdir/." "$shadow/"
for pc in $hidden_pc; do rm -f "$shadow/$pc.pc"; done
mount --bind "$shadow" "$pcdir"
# The headers, behind empty directories.
for dir in /usr/include/X11 /usr/include/$multiarch/libavcodec \
	/usr/include/$multiarch/libavformat /usr/include/$multiarch/libavutil \
	/usr/include/$multiarch/libswscale /usr/include/$multiarch/libswresample; do
	[ -d "$dir" ] && mount -t tmpfs tmpfs "$dir"
done
# Out of reach, or this proves nothing.
for pc in $hidden_pc; do
	if pkg-config --exists "$pc"; then
		echo "no_desktop.sh: $pc.pc is still found" >&2
		exit 1
	fi
done
if printf '#include <X11/Xlib.h>\n' | gcc -E - >/dev/null 2>&1 ||
	printf '#include <libavcodec/avcodec.h>\n' | gcc -E - >/dev/null 2>&1; then
	echo "no_desktop.sh: X11 or FFmpeg headers are still found" >&2
	exit 1
fi

cd "$build"
"$src/configure" --disable-desktop --enable-werror >configure.out 2>&1 ||
	{ tail -20 configure.out; exit 1; }
make -j"$(nproc)" >make.out 2>&1 || { tail -40 make.out; exit 1; }
for prog in berthd berth berth-gateway berth-probe berth-vt; do
	[ -x "$prog" ] || { echo "no_desktop.sh: $prog was not built" >&2; exit 1; }
done
[ ! -e berth-desktop ] || { echo "no_desktop.sh: berth-desktop was built" >&2; exit 1; }
if readelf -d berthd berth berth-gateway berth-probe berth-vt |
	grep -E 'NEEDED.*lib(X[a-z]*|av[a-z]*|sw[a-z]*)\.so'; then
	echo "no_desktop.sh: a program links X11 or FFmpeg" >&2
	exit 1
fi
make -j"$(nproc)" check
