#!/bin/sh
# berth-xfce: the XFCE session on $DISPLAY, with a D-Bus session bus of
# its own that lives and dies with it. Its home is a directory in berth's
# state directory, seeded with the panel's default layout: without one,
# xfce4-panel asks on its first start which layout to use and shows no
# panel until someone answers.
set -eu

: "${DISPLAY:?berth-xfce needs DISPLAY}"
home=${BERTH_DESKTOP_HOME:-${BERTH_STATE_DIR:-/var/lib/berth}/desktop-home}
xml=$home/.config/xfce4/xfconf/xfce-perchannel-xml
mkdir -p "$xml"
if [ ! -e "$xml/xfce4-panel.xml" ] && [ -e /etc/xdg/xfce4/panel/default.xml ]; then
	cp /etc/xdg/xfce4/panel/default.xml "$xml/xfce4-panel.xml"
fi
export HOME="$home"
export XDG_CONFIG_HOME="$home/.config"
export XDG_CACHE_HOME="$home/.cache"
exec dbus-run-session -- xfce4-session
