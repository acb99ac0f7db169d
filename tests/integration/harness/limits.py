"""What the resource limit tests share: a config with berthd's cgroups on
or off, a user made for one case (so that a per-user count such as
RLIMIT_NPROC sees that case's processes alone), a process's cgroups as
/proc tells them, a process's CPU time, and whether a TCP port is free.

    with case_user() as user, Sandbox(config=limits_config(cgroups=False)) as sb:
        ...
"""

import contextlib
import os
import pwd
import socket
import subprocess

from .procs import scratch
from .runner import expect
from .sandbox import minimal_config


def limits_config(cgroups=True, extra=""):
    """The minimal config, with `[berthd] cgroups = off` unless cgroups,
    and extra appended."""
    text = minimal_config()
    if not cgroups:
        expect("[berthd]\n" in text, "the minimal config has no [berthd] section")
        text = text.replace("[berthd]\n", "[berthd]\ncgroups = off\n", 1)
    if extra:
        text = text.rstrip("\n") + "\n\n" + extra
    return text


@contextlib.contextmanager
def case_user():
    """A user of the case's own, with a group of its own and no home,
    removed after (once nothing of it runs: close its sandboxes inside
    the with block). Yields its passwd entry."""
    name = "bl%d" % os.getpid()
    subprocess.run(["userdel", name], capture_output=True, timeout=30)
    subprocess.run(["groupdel", name], capture_output=True, timeout=30)
    subprocess.run(["useradd", "-M", "-U", "-s", "/bin/sh", name], check=True, capture_output=True, timeout=30)
    try:
        yield pwd.getpwnam(name)
    finally:
        subprocess.run(["pkill", "-KILL", "-u", name], capture_output=True, timeout=30)
        subprocess.run(["userdel", name], capture_output=True, timeout=30)
        subprocess.run(["groupdel", name], capture_output=True, timeout=30)


def user_dir(pw, mode=0o755):
    """A scratch directory owned by the user pw."""
    d = scratch(mode)
    os.chown(d, pw.pw_uid, pw.pw_gid)
    return d


def cgroups_of(pid):
    """pid's cgroups from /proc/PID/cgroup: {hierarchy: path}, the
    hierarchy being "0" (v2) or a v1 line's controller list ("pids",
    "cpu,cpuacct"...); {} if pid is gone."""
    out = {}
    try:
        with open("/proc/%d/cgroup" % pid) as f:
            for line in f:
                num, ctls, path = line.rstrip("\n").split(":", 2)
                out[ctls or num] = path
    except (FileNotFoundError, ProcessLookupError):
        pass
    return out


def cgroup_dir(hierarchy, path):
    """The directory of a group named as cgroups_of names it (hierarchy
    "0" for v2, else a v1 controller list), through this process's
    mounts; None if the hierarchy is not mounted here."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, right = line.split(" - ", 1)
            fields, (fstype, _, opts) = left.split(), right.split()[:3]
            if fstype == "cgroup2" and hierarchy == "0" or (
                    fstype == "cgroup" and set(hierarchy.split(",")) <= set(opts.split(","))):
                root, mount = fields[3], fields[4]
                rel = os.path.relpath(path, root) if root != "/" else path.lstrip("/")
                return os.path.normpath(os.path.join(mount, rel))
    return None


def cpu_seconds(pid):
    """pid's user + system CPU time in seconds (its threads', not its
    children's)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def port_free(port):
    """Whether nothing listens on 127.0.0.1:port: a connect is refused and
    a listening socket can be bound there again."""
    c = socket.socket()
    c.settimeout(2)
    try:
        c.connect(("127.0.0.1", port))
        return False
    except ConnectionRefusedError:
        pass
    finally:
        c.close()
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        s.listen(1)
        return True
    except OSError:
        return False
    finally:
        s.close()


def in_berthd_mounts(sb, argv):
    """Runs argv (as root) in berthd's mount namespace, which is its own
    (a sandbox's unshare makes one, private): what it mounts is seen by
    berthd and its children alone."""
    subprocess.run(["nsenter", "-t", str(sb.berthd_pid()), "-m"] + list(argv), check=True,
                   capture_output=True, timeout=30)


def mounted_for_berthd(sb, path):
    """Whether path is a mount point in berthd's mount namespace."""
    with open("/proc/%d/mountinfo" % sb.berthd_pid()) as f:
        return any(line.split()[4] == path for line in f)


def statvfs_free(path):
    """Bytes free to an unprivileged user on path's filesystem."""
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize
