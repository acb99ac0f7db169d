#!/bin/sh
# berth-chromium: Chromium on $DISPLAY with DevTools on loopback only, a
# profile in the desktop's directory of berth's state, its own sandbox on
# (it runs as the desktop's user; the namespace sandbox needs unprivileged
# user namespaces), and none of the first-run, sync, update or
# crash-report traffic of a desktop browser.
#
# A Chromium killed with SIGKILL leaves its Singleton* files behind, and a
# profile carried to a new machine names a host that is not this one; in
# both cases Chromium refuses to start ("profile in use"). They are
# removed only when the process they name is gone; a live owner keeps
# them, and this Chromium then hands its URL to that one and exits.
set -eu

: "${DISPLAY:?berth-chromium needs DISPLAY}"
port=${BERTH_CDP_PORT:-9222}
desk=${BERTH_STATE_DIR:-/var/lib/berth}/desktop
profile=${BERTH_CHROMIUM_PROFILE:-$desk/chromium}
export XAUTHORITY="$desk/Xauthority"
if [ "$(id -u)" = 0 ]; then
	echo "berth-chromium: refusing to run as root (run it as the desktop's user)" >&2
	exit 1
fi
mkdir -p "$profile"

lock=$(readlink "$profile/SingletonLock" 2>/dev/null || true)
if [ -n "$lock" ]; then
	owner=${lock##*-}
	host=${lock%-*}
	alive=no
	if [ "$host" = "$(uname -n)" ] && [ -d "/proc/$owner" ]; then
		case $(cat "/proc/$owner/comm" 2>/dev/null) in
		chrom*) alive=yes ;;
		esac
	fi
	if [ "$alive" = no ]; then
		echo "berth-chromium: removing the stale lock of $lock" >&2
		rm -f "$profile/SingletonLock" "$profile/SingletonCookie" \
		    "$profile/SingletonSocket"
	fi
fi

for c in chromium chromium-browser google-chrome; do
	if command -v "$c" >/dev/null 2>&1; then
		exec "$c" \
		    --remote-debugging-address=127.0.0.1 \
		    --remote-debugging-port="$port" \
		    --user-data-dir="$profile" \
		    --no-first-run \
		    --no-default-browser-check \
		    --disable-background-networking \
		    --disable-component-update \
		    --disable-default-apps \
		    --disable-sync \
		    --disable-breakpad \
		    --disable-domain-reliability \
		    --disable-features=Translate,MediaRouter,OptimizationHints \
		    --metrics-recording-only \
		    --password-store=basic \
		    --use-mock-keychain \
		    --disable-dev-shm-usage \
		    --start-maximized \
		    "$@" about:blank
	fi
done
echo "berth-chromium: no chromium in PATH" >&2
exit 127
