#!/bin/sh
# berth-xserver: the desktop's X server (Xvnc), made safe as root, run as
# the desktop's user.
#
#   berth-xserver :N [XVNC OPTIONS...]
#
# Run by berthd as root, at every start of the X server:
# - /tmp/.X11-unix is a real directory of root's, writable by the desktop
#   user's group alone (mode 1775), and an X:N socket or lock of another
#   user is removed: nobody else can take the display's name while the X
#   server restarts (the abstract socket is off: -nolisten local);
# - <state>/desktop (the desktop user's: its Xauthority, home, bus,
#   Chromium's profile) and <state>/recordings are the desktop user's, mode
#   0700; <state>/vnc is the desktop user's with the gateway's group,
#   setgid, mode 2750, and holds the RFB socket (mode 0660): only the
#   gateway (and berth-probe) reach the VNC server, and no TCP port is open.
# - Xvnc gets a /tmp of its own: in a mount namespace of its own, a tmpfs
#   on /tmp with the real /tmp/.X11-unix (and the desktop's directories,
#   if under /tmp) bound back in. Its lock file, /tmp/.XN-lock, is then
#   out of every other user's reach: nobody can make it refuse to start
#   by leaving one in the shared /tmp while it restarts.
# Then, as the desktop user, a fresh MIT-MAGIC-COOKIE-1 goes into
# <state>/desktop/Xauthority (mode 0600) and Xvnc starts with -auth on it.
set -eu

user=${BERTH_DESKTOP_USER:-agent}
viewers=${BERTH_VNC_GROUP:-berth-gateway}
state=${BERTH_STATE_DIR:-/var/lib/berth}
desk=$state/desktop
vnc=$state/vnc
x11=/tmp/.X11-unix

[ $# -gt 0 ] || { echo "usage: berth-xserver :N [XVNC OPTIONS...]" >&2; exit 2; }
display=$1
n=${display#:}
case $n in '' | *[!0-9]*) echo "berth-xserver: $display is not :N" >&2; exit 2 ;; esac

if [ "$(id -u)" = 0 ] && [ "${BERTH_XSERVER_STEP:-}" != private-tmp ]; then
	group=$(id -gn "$user")
	if ! getent group "$viewers" >/dev/null; then
		echo "berth-xserver: no group $viewers (the gateway's); the VNC socket is $group's" >&2
		viewers=$group
	fi
	if [ -L "$x11" ] || { [ -e "$x11" ] && [ ! -d "$x11" ]; }; then
		rm -f "$x11"
	fi
	mkdir -p "$x11"
	chown "root:$group" "$x11"
	chmod 1775 "$x11"
	f=$x11/X$n
	if [ -e "$f" ] || [ -L "$f" ]; then
		[ "$(stat -c %U "$f")" = "$user" ] || rm -f "$f"
	fi
	for d in "$desk" "$state/recordings"; do
		[ -L "$d" ] && rm -f "$d"
		mkdir -p "$d"
		chown "$user:$group" "$d"
		chmod 0700 "$d"
	done
	[ -L "$vnc" ] && rm -f "$vnc"
	mkdir -p "$vnc"
	chown "$user:$viewers" "$vnc"
	chmod 2750 "$vnc"
	exec env BERTH_XSERVER_STEP=private-tmp \
	    unshare --mount --propagation private "$0" "$@"
fi

# Still root, in the mount namespace of Xvnc alone.
if [ "${BERTH_XSERVER_STEP:-}" = private-tmp ]; then
	unset BERTH_XSERVER_STEP
	group=$(id -gn "$user")
	exec 7<"$x11" 8<"$desk" 9<"$vnc"
	mount -t tmpfs -o mode=1777,size=16m,nosuid,nodev berth-xserver-tmp /tmp
	# What Xvnc needs of the real /tmp, through the descriptors kept on
	# it before the tmpfs hid it.
	mkdir /tmp/.X11-unix
	mount --no-canonicalize --bind /proc/self/fd/7 /tmp/.X11-unix
	for kept in "8 $desk" "9 $vnc"; do
		case ${kept#* } in
		/tmp/*)
			mkdir -p "${kept#* }"
			mount --no-canonicalize --bind "/proc/self/fd/${kept%% *}" "${kept#* }"
			;;
		esac
	done
	exec 7<&- 8<&- 9<&-
	exec setpriv --reuid="$user" --regid="$group" --init-groups "$0" "$@"
fi

umask 077
xa=$desk/Xauthority
rm -f "$xa" "$vnc/rfb.sock"
xauth -q -f "$xa" add "$display" MIT-MAGIC-COOKIE-1 \
    "$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
shift
exec Xvnc "$display" -auth "$xa" -rfbport -1 -rfbunixpath "$vnc/rfb.sock" \
    -rfbunixmode 0660 -nolisten tcp -nolisten local "$@"
