#!/usr/bin/env bash
# install.sh: the steps that make a Debian 12 system a berth image, run
# by images/Dockerfile and by the test that boots such a root
# (tests/integration/test_image.py), so that the two cannot differ.
#
#   images/install.sh build SRC OUT
#       the build dependencies debian/control names, then berth's
#       packages built from the tree SRC, into the directory OUT
#   images/install.sh install DEBS desktop|minimal
#       the packages of DEBS (berth, and for the desktop berth-desktop,
#       with what they depend on: Xvnc, XFCE's parts, Chromium, noVNC),
#       the agent runtimes for the desktop (images/runtimes.sh: node >=
#       20.6 and npm on PATH), and /etc/berth/berth.conf the image's
#       config. The packages make the users (berth-gateway, agent).
#
# As root. apt-get fetches only what is not installed already.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
export DEBIAN_FRONTEND=noninteractive

say() { printf '==> %s\n' "$*" >&2; }
die() { echo "install.sh: $*" >&2; exit 1; }

# apt-get install ARGS, updating the lists first only if it cannot.
apt_install() {
	apt-get install -y -q --no-install-recommends "$@" >/dev/null 2>&1 && return 0
	say "apt-get update"
	apt-get update -q >/dev/null
	apt-get install -y -q --no-install-recommends "$@" >/dev/null
}

# The Build-Depends of a debian/control, as one apt-get satisfy argument.
build_depends() {
	sed -n '/^Build-Depends:/,/^[^ ]/p' "$1" |
		sed '1s/^Build-Depends://; /^[^ ]/d' | tr -s ' \t\n' ' '
}

cmd_build() {
	local src=$1 out=$2 deps
	[ -f "$src/debian/control" ] || die "$src has no debian/control"
	deps=$(build_depends "$src/debian/control")
	[ -n "$deps" ] || die "no Build-Depends in $src/debian/control"
	say "build dependencies"
	apt_install debhelper dpkg-dev fakeroot autoconf automake make gcc
	apt-get satisfy -y -q --no-install-recommends "$deps" >/dev/null 2>&1 || {
		apt-get update -q >/dev/null
		apt-get satisfy -y -q --no-install-recommends "$deps" >/dev/null
	}
	say "dpkg-buildpackage"
	(cd "$src" && dpkg-buildpackage -us -uc -b >/dev/null)
	mkdir -p "$out"
	mv "$src"/../berth_*.deb "$src"/../berth-desktop_*.deb "$out"/
}

cmd_install() {
	local debs=$1 image=$2 pkgs
	case $image in
	desktop) pkgs=("$debs"/berth_*.deb "$debs"/berth-desktop_*.deb) ;;
	minimal) pkgs=("$debs"/berth_*.deb) ;;
	*) die "the image is desktop or minimal, not $image" ;;
	esac
	for p in "${pkgs[@]}"; do [ -f "$p" ] || die "no package $p"; done
	say "installing ${pkgs[*]##*/}"
	apt_install curl "${pkgs[@]}"
	for u in berth-gateway $([ "$image" = desktop ] && echo agent); do
		getent passwd "$u" >/dev/null || die "the packages did not make the user $u"
	done
	if [ "$image" = desktop ]; then
		say "the agent runtimes"
		"$here/runtimes.sh" /usr/local
	fi
	ln -sfn "$image.conf" /etc/berth/berth.conf
	rm -rf /var/lib/apt/lists/*
}

case ${1:-} in
build) [ $# -eq 3 ] || die "usage: install.sh build SRC OUT"; cmd_build "$2" "$3" ;;
install) [ $# -eq 3 ] || die "usage: install.sh install DEBS desktop|minimal"; cmd_install "$2" "$3" ;;
*) die "usage: install.sh build SRC OUT | install DEBS desktop|minimal" ;;
esac
