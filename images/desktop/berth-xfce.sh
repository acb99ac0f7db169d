#!/bin/sh
# berth-xfce: runs one part of the XFCE desktop in the desktop's own
# environment, as the desktop's user: its home in the desktop's directory
# of berth's state (made by berth-xserver), its D-Bus session bus there
# too, and the X server's cookie.
#
#   berth-xfce bus            the session bus (writes its address on fd 3
#                             once it listens: "ready = notify-fd 3")
#   berth-xfce PROGRAM ARGS   a part: xfwm4, xfce4-panel, xfdesktop, ...
#   berth-xfce berth-desktop ARGS
#                             berth's own X client, from beside this script
#
# Each part is a berthd service of its own, so berthd restarts whichever
# dies, as it does any service, instead of leaving that to xfce4-session.
# The home is seeded with the panel's default layout: without one,
# xfce4-panel asks on its first start which layout to use and shows no
# panel until someone answers.
set -eu

state=${BERTH_STATE_DIR:-/var/lib/berth}
desk=$state/desktop
home=${BERTH_DESKTOP_HOME:-$desk/home}
bus=${BERTH_DESKTOP_BUS:-$desk/bus}
export XAUTHORITY="$desk/Xauthority"
xml=$home/.config/xfce4/xfconf/xfce-perchannel-xml
mkdir -p "$xml"
if [ ! -e "$xml/xfce4-panel.xml" ] && [ -e /etc/xdg/xfce4/panel/default.xml ]; then
	cp /etc/xdg/xfce4/panel/default.xml "$xml/xfce4-panel.xml.$$"
	mv "$xml/xfce4-panel.xml.$$" "$xml/xfce4-panel.xml"
fi
export HOME="$home"
export XDG_CONFIG_HOME="$home/.config"
export XDG_CACHE_HOME="$home/.cache"
export DBUS_SESSION_BUS_ADDRESS="unix:path=$bus"

[ $# -gt 0 ] || { echo "usage: berth-xfce bus | berth-xfce PROGRAM [ARGS...]" >&2; exit 2; }
if [ "$1" = bus ]; then
	rm -f "$bus"
	exec dbus-daemon --session --nofork --nopidfile --address="unix:path=$bus" \
	    --print-address=3
fi
: "${DISPLAY:?berth-xfce needs DISPLAY}"
case $1 in
berth-*) prog=$1; shift; exec "$(dirname "$0")/$prog" "$@" ;;
esac
exec "$@"
