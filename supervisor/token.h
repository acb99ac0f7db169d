/* token: the secret a WebSocket client must present. berthd makes sure the
 * token file exists (creating a fresh random token, mode 0600) before the
 * gateway reads it; berthd itself never sends the token anywhere. */
#ifndef BERTH_TOKEN_H
#define BERTH_TOKEN_H

/* Creates path with a new token unless it exists and holds one. Returns 0,
 * or -1 with *cause (the caller frees it). */
int token_ensure(const char *path, char **cause);

#endif
