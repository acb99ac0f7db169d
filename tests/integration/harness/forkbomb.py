"""A fork bomb at its wall, for the kill tests and bench/kill.sh:

    forkbomb.py N

makes N processes in all (itself and N-1 children), each child forking
again as soon as its last fork has ended, and prints "up" once it has
tried all N-1. Each runs at nice 19, yielding the CPU to berthd and to
whoever measures it: what a ping to berthd waits for while the bomb dies
is berthd's loop, not a core shared with N others."""

import os
import sys
import time


def child():
    while True:
        try:
            if os.fork() == 0:
                time.sleep(0.05)
                os._exit(0)
            os.wait()
        except OSError:
            time.sleep(0.001)


os.nice(19)
for _ in range(int(sys.argv[1]) - 1):
    try:
        if os.fork() == 0:
            child()
    except OSError:
        pass
print("up", flush=True)
time.sleep(1000)
