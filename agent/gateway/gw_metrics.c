/* gw_metrics: the gateway's counters and their Prometheus text; owns the
 * counters, which live as long as the process. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway.h"
#include "gw_http.h"
#include "gw_metrics.h"
#include "log.h"

struct gw_metrics gw_metrics;

static const char *const gw_metrics_paths[GW_METRICS_NPATHS] = {
    [GW_METRICS_HEALTHZ] = "/healthz",
    [GW_METRICS_READYZ] = "/readyz",
    [GW_METRICS_METRICS] = "/metrics",
    [GW_METRICS_V1] = GATEWAY_WS_PATH,
    [GW_METRICS_NOVNC] = GW_HTTP_NOVNC_PATH,
    [GW_METRICS_CDP] = GW_HTTP_CDP_PATH,
    [GW_METRICS_OTHER] = "other",
};

/* The plain counters and gauges, in the order they are printed. */
static const struct {
	const char *name;
	const char *type;
	const char *help;
	size_t offset;
} gw_metrics_table[] = {
    {"berth_gateway_connections_total", "counter",
        "WebSocket clients accepted.",
        offsetof(struct gw_metrics, connections_total)},
    {"berth_gateway_connections_active", "gauge",
        "WebSocket clients connected now.",
        offsetof(struct gw_metrics, connections_active)},
    {"berth_gateway_messages_in_total", "counter",
        "Messages received from WebSocket clients.",
        offsetof(struct gw_metrics, messages_in)},
    {"berth_gateway_messages_out_total", "counter",
        "Messages sent to WebSocket clients.",
        offsetof(struct gw_metrics, messages_out)},
    {"berth_gateway_bytes_in_total", "counter",
        "Message bytes received from WebSocket clients.",
        offsetof(struct gw_metrics, bytes_in)},
    {"berth_gateway_bytes_out_total", "counter",
        "Message bytes sent to WebSocket clients.",
        offsetof(struct gw_metrics, bytes_out)},
    {"berth_gateway_auth_failures_total", "counter",
        "WebSocket upgrades refused for a missing or wrong token.",
        offsetof(struct gw_metrics, auth_failures)},
    {"berth_gateway_slow_consumer_drops_total", "counter",
        "WebSocket clients closed with 4008: a full queue with nothing "
        "taken for client_stall_ms, or too many requests unanswered.",
        offsetof(struct gw_metrics, slow_consumer_drops)},
    {"berth_gateway_upstream_connect_retries_total", "counter",
        "Connects to berthd tried again because its backlog was full.",
        offsetof(struct gw_metrics, upstream_connect_retries)},
    {"berth_events_total", "counter",
        "Events seen on the gateway's subscription to berthd.",
        offsetof(struct gw_metrics, events)},
};

enum gw_metrics_path
gw_metrics_path(const char *path)
{
	size_t nv = strlen(GW_HTTP_NOVNC_PATH), nc = strlen(GW_HTTP_CDP_PATH);
	int i;

	/* "/novnc" is the page's directory without its slash. */
	if (strncmp(path, GW_HTTP_NOVNC_PATH, nv) == 0 ||
	    strcmp(path, "/novnc") == 0)
		return GW_METRICS_NOVNC;
	if (strncmp(path, GW_HTTP_CDP_PATH, nc) == 0 &&
	    (path[nc] == '\0' || path[nc] == '/'))
		return GW_METRICS_CDP;
	if (gw_http_pty_path(path))
		return GW_METRICS_V1;
	for (i = 0; i < GW_METRICS_OTHER; i++)
		if (strcmp(path, gw_metrics_paths[i]) == 0)
			return (enum gw_metrics_path)i;
	return GW_METRICS_OTHER;
}

static void
gw_metrics_head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

char *
gw_metrics_render(int berthd_up, double uptime_s, size_t *len)
{
	const char *name;
	char *text = NULL;
	uint64_t v;
	size_t i;
	FILE *f;

	f = open_memstream(&text, len);
	if (f == NULL)
		log_fatal("open_memstream: out of memory");
	name = "berth_gateway_uptime_seconds";
	gw_metrics_head(f, name, "gauge", "Seconds since the gateway started.");
	fprintf(f, "%s %.3f\n", name, uptime_s);
	for (i = 0; i < sizeof gw_metrics_table / sizeof gw_metrics_table[0];
	     i++) {
		name = gw_metrics_table[i].name;
		memcpy(&v,
		    (const char *)&gw_metrics + gw_metrics_table[i].offset,
		    sizeof v);
		gw_metrics_head(f, name, gw_metrics_table[i].type,
		    gw_metrics_table[i].help);
		fprintf(f, "%s %" PRIu64 "\n", name, v);
	}
	name = "berth_gateway_http_requests_total";
	gw_metrics_head(f, name, "counter", "HTTP requests, by path.");
	for (i = 0; i < GW_METRICS_NPATHS; i++)
		fprintf(f, "%s{path=\"%s\"} %" PRIu64 "\n", name,
		    gw_metrics_paths[i], gw_metrics.http_requests[i]);
	name = "berth_up";
	gw_metrics_head(f, name, "gauge",
	    "1 if berthd answers the gateway's pings, else 0.");
	fprintf(f, "%s %d\n", name, berthd_up ? 1 : 0);
	if (fclose(f) != 0 || text == NULL)
		log_fatal("open_memstream: out of memory");
	return text;
}
