#!/usr/bin/env bash
# runtimes.sh: installs the agent runtimes the images' [runtime] sections
# name, from npm, into PREFIX (default /usr/local: PREFIX/bin/opencode and
# PREFIX/bin/pi, on the PATH every user's program gets). Only what is
# missing, or at another version than the one pinned here, is installed;
# a second run does nothing.
#
#   images/runtimes.sh [PREFIX]
#
# Needs node >= 20.6 (Pi's floor) and npm. No install script of theirs is
# needed (npm 11 runs none unless allowed): OpenCode's program comes as its
# platform's optional dependency.
set -euo pipefail

prefix=${1:-/usr/local}
pkgs=(opencode-ai@1.18.33 @mariozechner/pi-coding-agent@0.73.1)

say() { printf '==> %s\n' "$*" >&2; }

# The version of package $1 installed under prefix, or nothing.
installed() {
	local json="$prefix/lib/node_modules/$1/package.json"
	[ -f "$json" ] || return 0
	sed -n 's/^[[:space:]]*"version":[[:space:]]*"\([^"]*\)".*/\1/p' "$json" | head -1
}

# Whether package $1's program runs (an install can be half done).
runs() {
	case $1 in
	opencode-ai) "$prefix/bin/opencode" --version ;;
	*/pi-coding-agent) "$prefix/bin/pi" --version ;;
	esac >/dev/null 2>&1
}

command -v npm >/dev/null && command -v node >/dev/null ||
	{ echo "runtimes: needs node and npm" >&2; exit 1; }
node -e 'const [a, b] = process.versions.node.split(".").map(Number);
	process.exit(a > 20 || (a === 20 && b >= 6) ? 0 : 1)' ||
	{ echo "runtimes: Pi needs node >= 20.6; this is $(node --version)" >&2; exit 1; }

missing=()
for p in "${pkgs[@]}"; do
	name=${p%@*} want=${p##*@}
	[ "$(installed "$name")" = "$want" ] && runs "$name" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
say "npm install -g ${missing[*]}"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
npm install -g --prefix "$prefix" --no-audit --no-fund "${missing[@]}" \
	>"$log" 2>&1 || { cat "$log" >&2; exit 1; }
for p in "${pkgs[@]}"; do
	runs "${p%@*}" || { echo "runtimes: ${p%@*} does not run" >&2; exit 1; }
done
