/* service: a supervised process — spawn, restart with backoff, stop.
 *
 * First cut of the service manager: every service starts at boot and is
 * restarted by its policy with exponential backoff (a floor, doubling to
 * a cap, back to the floor once it has stayed up a while). Ownership:
 * service_add copies what it is given; service_free_all frees every
 * service. */
#ifndef BERTH_SERVICE_H
#define BERTH_SERVICE_H

#include <event2/event.h>
#include <msgpack.h>
#include <stdbool.h>

#include "config.h"

/* A service that stayed up this long restarts after the floor again. */
#define SERVICE_STABLE_MS 10000
/* How long a stopping service has between its SIGTERM and SIGKILL. */
#define SERVICE_STOP_TIMEOUT_MS 5000

struct service;

void service_init(struct event_base *base);
/* Adds a service; path is what to exec (a bare name is looked up in PATH),
 * argv its arguments (argv[0] included). */
struct service *service_add(const char *name, const char *path,
    char *const argv[], enum config_restart restart, unsigned backoff_min_ms,
    unsigned backoff_max_ms);
void service_start_all(void);
/* Stops every service (SIGTERM to its process group, SIGKILL after the
 * timeout) and calls done once none is left running. */
void service_stop_all(void (*done)(void));
/* Packs the array of services for the state op. */
void service_pack_list(msgpack_packer *pk);
void service_free_all(void);

#endif
