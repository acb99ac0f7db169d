/* gw_refusal: what becomes of a refused request, so that a flood of them
 * cannot flood berthd's journal or the log. Refusals are counted per
 * peer address (the port left out) and reason; the first of a quiet
 * peer is logged and sent to berthd at once, the rest of each
 * GW_REFUSAL_INTERVAL_US as one gateway.auth_failed with their count and
 * one log line saying how many more. */
#ifndef BERTH_GW_REFUSAL_H
#define BERTH_GW_REFUSAL_H

/* The interval refusals of one peer and reason are summed over. */
#define GW_REFUSAL_INTERVAL_US (1000 * 1000)
/* Peers counted at once; the refusals of more are counted as those of
 * the peer "*". */
#define GW_REFUSAL_PEERS 256

/* A request of peer ("ADDR:PORT" or "[ADDR6]:PORT", as gateway_peer
 * spells it) was refused for reason ("missing", "invalid", "malformed",
 * "origin"); what names the request in the log. */
void gw_refusal_note(const char *peer, const char *what, const char *reason);

#endif
