/* service: the service graph — start in dependency order the moment each
 * dependency is ready, watch readiness, restart by policy, stop in
 * reverse order.
 *
 * A service waits until every service it names in after/requires is ready
 * (or, for a one-shot, has exited 0), then starts; all that can start,
 * start at once. Its probe (probe.h) says when it is ready and whether it
 * stays so. When it exits it is restarted by its policy with exponential
 * backoff (floor, doubling, cap; back to the floor after it stayed ready
 * backoff_reset_ms), until max_deaths exits within death_window_ms (none
 * if unlimited) make it failed — which fails every service that requires
 * it — and retry_failed_ms later it is started afresh, with them. An exit
 * a dependency caused (one of its after/requires targets left ready
 * since it started, or is not ready now) is not counted: the service
 * waits for its dependencies and starts as at boot.
 *
 * Ownership: services borrow their config_service (the config outlives
 * them); service_free_all frees everything else. */
#ifndef BERTH_SERVICE_H
#define BERTH_SERVICE_H

#include <event2/event.h>
#include <msgpack.h>
#include <stdbool.h>

#include "config.h"

struct service;

/* cfg (which outlives the services) names the state directory (for the
 * sd_notify sockets), the token file (for the probes) and the socket
 * (BERTH_SOCKET in every service's environment). on_main_exit is called
 * when the main service has exited for good (status as from waitpid). */
void service_init(struct event_base *base, const struct config *cfg,
    void (*on_main_exit)(int status));
/* Adds a service. internal: berth's own (the gateway), not a readiness
 * check, stopped last, never stopped by service.stop. */
struct service *service_add(const struct config_service *cfg, bool internal);
/* Starts what can start; the rest waits for its dependencies. */
void service_start_all(void);
/* Stops every service in reverse dependency order, each with its stop
 * signal and SIGKILL after its timeout, and calls done once all are
 * down. Nothing restarts from then on.
 *
 * Any stop ends a service's whole tree (tree.h), and so does an exit of
 * its leader: what the leader left gets the stop signal and SIGKILL after
 * stop_timeout_ms, and the service stays "stopping" until all of it is
 * gone (service.killed says how many had to be killed). */
void service_shutdown(void (*done)(void));

struct service *service_find(const char *name);
/* Ops: 0, or -1 with *code (a PROTO_E_* code) and *cause (freed by the
 * caller). */
int service_start(struct service *s, const char **code, char **cause);
int service_stop(struct service *s, const char **code, char **cause);
int service_restart(struct service *s, const char **code, char **cause);
/* service.signal: sig to s's process group. */
int service_signal(struct service *s, int sig, const char **code, char **cause);
/* Passes on a signal berthd received (one of forward_signals): to the
 * process group of every running service with forward = yes, or, if no
 * service says so, of the main service. Returns how many got it. */
size_t service_forward(int sig);
/* A check.report for s. -1 if s's probe is not "report". */
int service_report(struct service *s, bool ok, const char *reason);

/* Whether status (as from waitpid) is a success by s's exit_codes_ok. */
bool service_exit_ok(const struct service *s, int status);
/* Whether s has exited since berthd started, and its last status. */
bool service_last_exit(const struct service *s, int *status);

/* The array of services (state, service.list) and one in detail. */
void service_pack_list(msgpack_packer *pk);
void service_pack_status(msgpack_packer *pk, const struct service *s);
/* The readiness checks: one per required service, by name. */
void service_pack_checks(msgpack_packer *pk);
void service_free_all(void);

#endif
