/* ws_cred: berth-workspace as git's credential helper. git runs it as
 * "berth-workspace get" (then "store" or "erase", which it ignores) and
 * reads "username=...\npassword=...\n" on its stdout; the answers are the
 * two lines of the pipe at the fd BERTH_CRED_FD names, read a byte at a
 * time up to the end of the second line. The credential is in no argv,
 * environment variable or file: a GIT_ASKPASS would do as well but for
 * its password prompt, an argv that names the username.
 *
 * It answers only for the repository berth was asked to prepare
 * (BERTH_CRED_URL): git names what it wants the credential for on stdin
 * ("protocol=https\nhost=HOST:PORT\npath=PATH\n\n"), and a workspace's
 * config or a server's redirect can make that another URL than the one
 * requested. Any other request gets no answer (git then fails) and a line
 * on stderr that ws_git takes as the reason: WS_CRED_REFUSED and what was
 * asked for. Whatever it answers, it empties the pipe: nothing is left
 * there for git or what git runs to read afterwards. */
#ifndef BERTH_WS_CRED_H
#define BERTH_WS_CRED_H

#include <stdbool.h>
#include <stddef.h>

/* How a refusal's stderr line begins. */
#define WS_CRED_REFUSED "berth-workspace: "
/* git's request is read up to this many bytes. */
#define WS_CRED_REQUEST_MAX 8192

/* Whether this run is git's credential helper (BERTH_CRED_FD set, one
 * argument: the helper's action). */
bool ws_cred_wanted(int argc, char **argv);
/* Answers git for action; the exit status for main. */
int ws_cred_main(const char *action);

/* Whether git's request req[0..len) asks for url (https://HOST[:PORT]/PATH
 * as berth checked it): protocol "https", host exactly HOST[:PORT], and
 * path, if git sent one, PATH (both percent-decoded, trailing slashes
 * aside). If not, why holds a line that says what was asked for instead
 * (at most whymax bytes with its NUL; no control byte). Pure: no I/O. */
bool ws_cred_match(
    const char *req, size_t len, const char *url, char *why, size_t whymax);

#endif
