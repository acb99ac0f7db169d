/* readiness: watches the readiness of one service while it runs.
 *
 * Network checks (tcp, http, rfb, cdp) run in berth-probe, a child that
 * prints a line whenever the answer changes: berthd reads those lines and
 * never the network's bytes. exec runs a command with a deadline; notify-fd
 * and sd_notify wait for the service's own word; report waits for another
 * berth program's check.report. Not ready: re-checked fast (10 ms doubling
 * to 250 ms); ready: re-checked every interval, so a service that dies or
 * hangs turns unready with a reason.
 *
 * Ownership: the service owns its probe (readiness_new / readiness_free); the
 * probe borrows the config_service, which outlives it. */
#ifndef BERTH_READINESS_H
#define BERTH_READINESS_H

#include <event2/event.h>
#include <stdbool.h>

#include "child.h"
#include "config.h"

struct readiness;

/* Told every change: ok, or not with a reason (never NULL). */
typedef void (*readiness_cb)(void *arg, bool ok, const char *reason);

/* conf (which outlives the probe) gives the state directory (for the
 * notify sockets), the token file (handed to berth-probe for the probes
 * that present the token) and the gateway's address, which "{gateway}" in
 * a probe's arguments stands for. */
struct readiness *readiness_new(struct event_base *base,
    const struct config_service *cfg, const struct config *conf,
    readiness_cb cb, void *arg);
void readiness_free(struct readiness *p);

/* Before the service is spawned: adds to spec what the service needs to
 * speak to the probe (the notify fd), and sets *env to an environment
 * entry for it (NOTIFY_SOCKET=..., owned by the probe) or NULL. */
int readiness_prepare(struct readiness *p, struct child_spec *spec,
    const char **env, char **cause);
/* The service was spawned (or its spawn failed: spawned false). */
void readiness_start(struct readiness *p, bool spawned);
/* The service is gone or stopping: stop checking, quietly. */
void readiness_stop(struct readiness *p);
/* A check.report for this service. Returns -1 if its probe is not
 * "report" (the report is then ignored). */
int readiness_report(struct readiness *p, bool ok, const char *reason);

#endif
