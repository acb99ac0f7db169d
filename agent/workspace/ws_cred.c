/* ws_cred: git's credential helper from a pipe (see ws_cred.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "ws_cred.h"

#define WS_CRED_LINE_MAX 1024
#define WS_CRED_FIELD_MAX 2048

bool
ws_cred_wanted(int argc, char **argv)
{
	(void)argv;
	return argc == 2 && getenv("BERTH_CRED_FD") != NULL;
}

/* One line of fd into line (without its "\n"); its length, or -1. */
static ssize_t
ws_cred_line(int fd, char *line)
{
	size_t n = 0;
	ssize_t r;

	while (n < WS_CRED_LINE_MAX) {
		r = read(fd, line + n, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		if (line[n] == '\n')
			return (ssize_t)n;
		n++;
	}
	return -1;
}

static int
ws_cred_hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* s[0..n) percent-decoded into out (git decodes what it sends), trailing
 * slashes dropped; false if it does not fit. */
static bool
ws_cred_decode(const char *s, size_t n, char *out, size_t max)
{
	size_t i, o = 0;
	int hi, lo;

	for (i = 0; i < n; i++) {
		if (o + 1 >= max)
			return false;
		if (s[i] == '%' && i + 2 < n &&
		    (hi = ws_cred_hex(s[i + 1])) >= 0 &&
		    (lo = ws_cred_hex(s[i + 2])) >= 0) {
			out[o++] = (char)(hi * 16 + lo);
			i += 2;
		} else
			out[o++] = s[i];
	}
	while (o > 0 && out[o - 1] == '/')
		o--;
	out[o] = '\0';
	return true;
}

/* The value of "key=" in req, the last line that has it; NULL if none.
 * *n gets its length; *count how many lines had the key. */
static const char *
ws_cred_field(
    const char *req, size_t len, const char *key, size_t *n, int *count)
{
	size_t klen = strlen(key);
	const char *p = req, *end = req + len, *nl, *v = NULL;

	*count = 0;
	for (; p < end; p = nl + 1) {
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			nl = end;
		if ((size_t)(nl - p) > klen && memcmp(p, key, klen) == 0 &&
		    p[klen] == '=') {
			v = p + klen + 1;
			*n = (size_t)(nl - v);
			(*count)++;
		}
	}
	return v;
}

/* printf into why, control bytes made '?'. */
static void __attribute__((format(printf, 3, 4)))
ws_cred_why(char *why, size_t max, const char *fmt, ...)
{
	va_list ap;
	size_t i;

	if (max == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(why, max, fmt, ap);
	va_end(ap);
	for (i = 0; why[i] != '\0'; i++)
		if ((unsigned char)why[i] < 0x20 || why[i] == 0x7f)
			why[i] = '?';
}

bool
ws_cred_match(
    const char *req, size_t len, const char *url, char *why, size_t whymax)
{
	char want_path[WS_CRED_FIELD_MAX], got_path[WS_CRED_FIELD_MAX];
	const char *proto, *host, *path, *uhost, *upath;
	size_t plen = 0, hlen = 0, pathlen = 0, uhlen;
	int np, nh, npath;

	proto = ws_cred_field(req, len, "protocol", &plen, &np);
	host = ws_cred_field(req, len, "host", &hlen, &nh);
	path = ws_cred_field(req, len, "path", &pathlen, &npath);
	if (np != 1 || nh != 1 || npath > 1 || hlen >= WS_CRED_FIELD_MAX ||
	    plen >= WS_CRED_FIELD_MAX || pathlen >= WS_CRED_FIELD_MAX) {
		ws_cred_why(why, whymax,
		    "git asked for a credential without one protocol and "
		    "host");
		return false;
	}
	if (strncmp(url, "https://", 8) != 0 ||
	    (upath = strchr(url + 8, '/')) == NULL) {
		ws_cred_why(why, whymax, "no repository to answer for");
		return false;
	}
	uhost = url + 8;
	uhlen = (size_t)(upath - uhost);
	if (plen != 5 || memcmp(proto, "https", 5) != 0) {
		ws_cred_why(why, whymax,
		    "git asked for a credential for %.*s://%.*s, not https",
		    (int)plen, proto, (int)hlen, host);
		return false;
	}
	if (hlen != uhlen || memcmp(host, uhost, hlen) != 0) {
		ws_cred_why(why, whymax,
		    "git asked for a credential for another host: %.*s",
		    (int)hlen, host);
		return false;
	}
	if (path == NULL)
		return true;
	if (!ws_cred_decode(
	        upath + 1, strlen(upath + 1), want_path, sizeof want_path) ||
	    !ws_cred_decode(path, pathlen, got_path, sizeof got_path) ||
	    strcmp(want_path, got_path) != 0) {
		ws_cred_why(why, whymax,
		    "git asked for a credential for another repository on "
		    "%.*s: /%.*s",
		    (int)hlen, host, (int)pathlen, path);
		return false;
	}
	return true;
}

/* git's request on stdin, up to its blank line, into req (at most
 * WS_CRED_REQUEST_MAX bytes kept); the rest read and dropped so that
 * git's write never meets a closed pipe. Returns the length kept, or -1
 * if the request was longer than that. */
static ssize_t
ws_cred_request(char *req)
{
	char buf[512];
	size_t n = 0;
	ssize_t r;
	bool over = false;

	while ((r = read(0, buf, sizeof buf)) != 0) {
		if (r < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if ((size_t)r > WS_CRED_REQUEST_MAX - n) {
			over = true;
			r = (ssize_t)(WS_CRED_REQUEST_MAX - n);
		}
		memcpy(req + n, buf, (size_t)r);
		n += (size_t)r;
	}
	return over ? -1 : (ssize_t)n;
}

/* Reads the pipe to its end (berthd closed its write end): what is left
 * of it is gone. */
static void
ws_cred_empty(int fd)
{
	char buf[512];
	ssize_t r;

	while ((r = read(fd, buf, sizeof buf)) != 0)
		if (r < 0 && errno != EINTR)
			break;
	explicit_bzero(buf, sizeof buf);
	close(fd);
}

/* Answers git; 0 once it is all written. */
static int
ws_cred_answer(const char *user, const char *pass)
{
	if (printf("username=%s\npassword=%s\n", user, pass) < 0)
		return 1;
	return fflush(stdout) == 0 ? 0 : 1;
}

int
ws_cred_main(const char *action)
{
	const char *s = getenv("BERTH_CRED_FD"),
	           *url = getenv("BERTH_CRED_URL");
	char user[WS_CRED_LINE_MAX + 1], pass[WS_CRED_LINE_MAX + 1], *end;
	char req[WS_CRED_REQUEST_MAX], why[WS_CRED_FIELD_MAX + 256];
	ssize_t ul = -1, pl = -1, rl;
	long fd;
	int rc = 1;

	/* Not to be read through /proc or ptrace by the user's others. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	rl = ws_cred_request(req);
	fd = strtol(s, &end, 10);
	if (*end != '\0' || fd < 3 || fd > 1023)
		return 1;
	if (strcmp(action, "get") == 0) {
		ul = ws_cred_line((int)fd, user);
		pl = ul >= 0 ? ws_cred_line((int)fd, pass) : -1;
	}
	ws_cred_empty((int)fd);
	if (ul > 0 && pl > 0) {
		if (rl < 0)
			snprintf(why, sizeof why,
			    "git's credential request was over %d bytes",
			    WS_CRED_REQUEST_MAX);
		if (rl >= 0 && url != NULL &&
		    ws_cred_match(req, (size_t)rl, url, why, sizeof why)) {
			user[ul] = pass[pl] = '\0';
			rc = ws_cred_answer(user, pass);
		} else
			fprintf(stderr, WS_CRED_REFUSED "%s\n",
			    url == NULL ? "no repository to answer for" : why);
	}
	explicit_bzero(user, sizeof user);
	explicit_bzero(pass, sizeof pass);
	return strcmp(action, "get") == 0 ? rc : 0;
}
