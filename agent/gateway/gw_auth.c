/* gw_auth: finding the credential a request presents (see gw_auth.h).
 * Owns nothing; pure. */
#include <string.h>
#include <strings.h>

#include "gw_auth.h"

int
gw_auth_trim(const char **p, size_t *len)
{
	while (*len > 0 && (**p == ' ' || **p == '\t')) {
		(*p)++;
		(*len)--;
	}
	while (*len > 0 && ((*p)[*len - 1] == ' ' || (*p)[*len - 1] == '\t'))
		(*len)--;
	return *len == 0 ? -1 : 0;
}

int
gw_auth_presented(const char *authz, size_t alen, const char **cred,
    size_t *len, const char **reason)
{
	if (authz == NULL) {
		*reason = "missing";
		return -1;
	}
	*reason = "malformed";
	if (alen < 7 || strncasecmp(authz, "Bearer ", 7) != 0)
		return -1;
	*cred = authz + 7;
	*len = alen - 7;
	return gw_auth_trim(cred, len);
}
