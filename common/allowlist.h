/* allowlist: the gateway's seccomp filter. The default action kills the
 * process: only the calls berth-gateway was seen to make after its start
 * (strace over its tests, plain and sanitizer builds) are allowed, some
 * only with arguments it uses. The gateway is the one berth program that
 * parses bytes from the network and holds no secret of its own, so what
 * it can do once owned is kept to serving sockets and reading noVNC's
 * files: no file is written or created, no process started or looked
 * into, no namespace made, no socket other than Unix and IP opened. */
#ifndef BERTH_ALLOWLIST_H
#define BERTH_ALLOWLIST_H

/* Sets no_new_privs and loads the filter into this process. Call once
 * every listening socket is open. Returns 0, or -1 with *cause (the
 * caller frees it). */
int allowlist_install(char **cause);
/* Tries, in a child of its own that installs the filter first, each call
 * an attacker who owned the gateway would want, and a few the gateway
 * needs, printing one line each: "NAME: killed (SIG)", "NAME: refused
 * (ERROR)" or "NAME: allowed". Returns 0 only if every attack was killed
 * by the filter and every needed call allowed. */
int allowlist_selftest(void);

#endif
