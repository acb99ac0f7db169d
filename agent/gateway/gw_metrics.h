/* gw_metrics: the gateway's counters, and their rendering as Prometheus
 * text (exposition format 0.0.4) for /metrics. */
#ifndef BERTH_GW_METRICS_H
#define BERTH_GW_METRICS_H

#include <stddef.h>
#include <stdint.h>

/* The paths /metrics counts requests of; anything else is "other", so a
 * scanner cannot grow the label set. NOVNC counts everything under
 * /novnc/ and CDP everything under /v1/cdp. */
enum gw_metrics_path {
	GW_METRICS_HEALTHZ,
	GW_METRICS_READYZ,
	GW_METRICS_METRICS,
	GW_METRICS_V1,
	GW_METRICS_NOVNC,
	GW_METRICS_CDP,
	GW_METRICS_OTHER,
	GW_METRICS_NPATHS
};

/* Bumped in place by the modules that see each thing happen. */
struct gw_metrics {
	uint64_t connections_total;  /* WebSocket clients accepted */
	uint64_t connections_active; /* ... and still connected */
	uint64_t messages_in;        /* messages from clients */
	uint64_t messages_out;       /* messages written to clients */
	uint64_t bytes_in;
	uint64_t bytes_out;
	uint64_t http_requests[GW_METRICS_NPATHS];
	uint64_t auth_failures;
	uint64_t slow_consumer_drops;
	uint64_t events; /* events seen on the control subscription */
	uint64_t upstream_connect_retries; /* connects to berthd retried */
};

extern struct gw_metrics gw_metrics;

/* The label path counts under; "/novnc/" and "/v1/cdp" by prefix. */
enum gw_metrics_path gw_metrics_path(const char *path);
/* The exposition text; *len is its length. The caller frees it. */
char *gw_metrics_render(int berthd_up, double uptime_s, size_t *len);

#endif
