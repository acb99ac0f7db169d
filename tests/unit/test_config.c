/* test_config: the config parser's promises (config.c): a good file gives
 * the structures it describes, with every default where a key is absent,
 * and every error, found while reading a line or only once the whole file
 * is read (config_finish), names the file, the line it is about and what
 * is wrong. Each error is also tried below lines of padding, so that the
 * line named is the one counted, not one that happens to match. */
#include <errno.h>
#include <stdarg.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "scratch.h"
#include "tap.h"
#include "xmalloc.h"

/* Comment and blank lines, put before a text to move its lines down. */
static const char pad[] = "# padding\n\n; more padding\n   \n";
#define PAD_LINES 4

/* A bad text, the line its error names, and what the message must say. */
struct bad {
	const char *text;
	int line;
	const char *says[2];
};

static char *
write_file(const char *dir, const char *name, const void *data, size_t len)
{
	char *path = xasprintf("%s/%s", dir, name);
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(data, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
	return path;
}

/* cause starts with prefix and says each of says (up to a NULL). */
static void
expect_says(const char *cause, const char *prefix, const char *const *says,
    size_t nsays)
{
	size_t i;

	ck_assert_ptr_nonnull(cause);
	ck_assert_msg(strncmp(cause, prefix, strlen(prefix)) == 0,
	    "\"%s\" does not start with \"%s\"", cause, prefix);
	for (i = 0; i < nsays && says[i] != NULL; i++)
		ck_assert_msg(strstr(cause, says[i]) != NULL,
		    "\"%s\" does not say \"%s\"", cause, says[i]);
}

/*
 * text must be refused: by config_parse_string (as "t.conf"), or, with
 * finish, read by config_load from a file and refused by config_finish.
 * The message must start with the file's name and line (line 0: the name
 * alone) and say each of says.
 */
static void
expect_error(const char *text, int line, const char *const *says, size_t nsays,
    bool finish)
{
	char *dir = NULL, *path = NULL, *cause = NULL, *prefix;
	const char *name = "t.conf";
	struct config cfg;

	config_init(&cfg);
	if (finish) {
		dir = scratch_make("test_config");
		name = path = write_file(dir, "berth.conf", text, strlen(text));
		ck_assert_msg(
		    config_load(&cfg, path, &cause) == 0, "%s", cause);
		ck_assert_msg(config_finish(&cfg, &cause) == -1,
		    "accepted:\n%.200s", text);
	} else
		ck_assert_msg(
		    config_parse_string(&cfg, text, name, &cause) == -1,
		    "accepted:\n%.200s", text);
	prefix = line > 0 ? xasprintf("%s:%d: ", name, line)
	                  : xasprintf("%s: ", name);
	expect_says(cause, prefix, says, nsays);
	free(prefix);
	free(cause);
	config_free(&cfg);
	free(path);
	if (dir != NULL)
		scratch_remove(dir);
}

/* Each case as it is, and below the padding. */
static void
expect_errors(const struct bad *cases, size_t n, bool finish)
{
	const size_t nsays = sizeof cases[0].says / sizeof cases[0].says[0];
	size_t i;
	char *padded;

	for (i = 0; i < n; i++) {
		expect_error(
		    cases[i].text, cases[i].line, cases[i].says, nsays, finish);
		padded = xasprintf("%s%s", pad, cases[i].text);
		expect_error(padded,
		    cases[i].line > 0 ? cases[i].line + PAD_LINES : 0,
		    cases[i].says, nsays, finish);
		free(padded);
	}
}

/* text must parse and finish; the caller frees cfg. */
static void
parse_good(struct config *cfg, const char *text)
{
	char *cause = NULL;

	config_init(cfg);
	ck_assert_msg(
	    config_parse_string(cfg, text, "t.conf", &cause) == 0, "%s", cause);
	ck_assert_msg(config_finish(cfg, &cause) == 0, "%s", cause);
}

static const struct config_service *
service_named(const struct config *cfg, const char *name)
{
	size_t i;

	for (i = 0; i < cfg->nservices; i++)
		if (strcmp(cfg->services[i].name, name) == 0)
			return &cfg->services[i];
	ck_abort_msg("no service \"%s\"", name);
	return NULL;
}

/* A NULL-terminated vector equals the NULL-terminated want. */
static void
expect_strv(char *const *v, const char *const *want)
{
	size_t i;

	ck_assert_ptr_nonnull(v);
	for (i = 0; want[i] != NULL; i++) {
		ck_assert_msg(v[i] != NULL, "missing \"%s\"", want[i]);
		ck_assert_str_eq(v[i], want[i]);
	}
	ck_assert_ptr_null(v[i]);
}

static void
expect_list(const struct config_list *l, const char *const *want)
{
	size_t n = 0;

	while (want[n] != NULL)
		n++;
	ck_assert_uint_eq(l->n, n);
	if (n > 0)
		expect_strv(l->v, want);
}

START_TEST(test_every_key)
{
	static const char text[] = "[berthd]\n"
	                           "state_dir = /run/b\n"
	                           "token_file = /etc/b/token\n"
	                           "socket = /run/b/s.sock\n"
	                           "[gateway]\n"
	                           "listen = 0.0.0.0:8080\n"
	                           "client_queue = 2M\n"
	                           "client_stall_ms = 2500\n"
	                           "command = /opt/gw\n"
	                           "vnc = 127.0.0.1:5900\n"
	                           "novnc_dir = /usr/share/novnc\n"
	                           "cdp = 127.0.0.1:9222\n"
	                           "cdp_relay_listen = 0.0.0.0:9223\n"
	                           "[journal]\n"
	                           "max_bytes = 1G\n"
	                           "segment_bytes = 64K\n"
	                           "sync = yes\n"
	                           "[labels]\n"
	                           "image = desktop\n"
	                           "team/owner = a.b-c_d\n"
	                           "[service web]\n"
	                           "command = /usr/bin/web --port 80\n"
	                           "user = nobody\n"
	                           "group = nogroup\n"
	                           "cwd = /srv\n"
	                           "scope = abstract-unix\n"
	                           "env = A=1\n"
	                           "env = B=x=y\n"
	                           "after = db cache\n"
	                           "requires = db\n"
	                           "ready = http http://127.0.0.1:80/ 200 ok\n"
	                           "ready_timeout_ms = 300\n"
	                           "ready_interval_ms = 40\n"
	                           "required = no\n"
	                           "main = yes\n"
	                           "restart = on-failure\n"
	                           "backoff_min_ms = 7\n"
	                           "backoff_max_ms = 70\n"
	                           "backoff_reset_ms = 700\n"
	                           "max_deaths = 9\n"
	                           "death_window_ms = 9000\n"
	                           "retry_failed_ms = 60000\n"
	                           "stop_signal = INT\n"
	                           "stop_timeout_ms = 1500\n"
	                           "[service db]\n"
	                           "command = db\n"
	                           "restart = never\n"
	                           "[check cache]\n"
	                           "ready = tcp 127.0.0.1:6379\n"
	                           "after = db\n"
	                           "requires = db\n"
	                           "required = false\n"
	                           "[gateway]\n"
	                           "public_url = https://sb.example/\n"
	                           "preview_listen = 0.0.0.0:7200\n"
	                           "preview_url = https://p.example:8443\n"
	                           "preview_domain = preview.example\n"
	                           "grant_max_ttl_s = 600\n";
	const struct config_service *s;
	struct config cfg;

	parse_good(&cfg, text);
	ck_assert_str_eq(cfg.state_dir, "/run/b");
	ck_assert_str_eq(cfg.token_file, "/etc/b/token");
	ck_assert_str_eq(cfg.socket, "/run/b/s.sock");
	ck_assert_str_eq(cfg.listen, "0.0.0.0:8080");
	ck_assert_uint_eq(cfg.client_queue, 2u << 20);
	ck_assert_uint_eq(cfg.client_stall_ms, 2500);
	ck_assert_str_eq(cfg.gateway_command, "/opt/gw");
	ck_assert_str_eq(cfg.vnc, "127.0.0.1:5900");
	ck_assert_str_eq(cfg.novnc_dir, "/usr/share/novnc");
	ck_assert_str_eq(cfg.cdp, "127.0.0.1:9222");
	ck_assert_str_eq(cfg.cdp_relay_listen, "0.0.0.0:9223");
	ck_assert_str_eq(cfg.public_url, "https://sb.example");
	ck_assert_str_eq(cfg.preview_listen, "0.0.0.0:7200");
	ck_assert_str_eq(cfg.preview_url, "https://p.example:8443");
	ck_assert_str_eq(cfg.preview_domain, "preview.example");
	ck_assert_uint_eq(cfg.grant_max_ttl_s, 600);
	ck_assert_uint_eq(cfg.journal_max_bytes, 1u << 30);
	ck_assert_uint_eq(cfg.journal_segment_bytes, 64u << 10);
	ck_assert(cfg.journal_sync);
	ck_assert_uint_eq(cfg.nlabels, 2);
	ck_assert_str_eq(cfg.labels[0].key, "image");
	ck_assert_str_eq(cfg.labels[0].value, "desktop");
	ck_assert_str_eq(cfg.labels[1].key, "team/owner");
	ck_assert_str_eq(cfg.labels[1].value, "a.b-c_d");
	ck_assert_uint_eq(cfg.nservices, 3);

	s = service_named(&cfg, "web");
	ck_assert(!s->check);
	ck_assert_int_eq(s->line, 21);
	expect_strv(s->argv,
	    (const char *const[]){"/usr/bin/web", "--port", "80", NULL});
	ck_assert_str_eq(s->user, "nobody");
	ck_assert_str_eq(s->group, "nogroup");
	ck_assert_str_eq(s->cwd, "/srv");
	ck_assert_uint_eq(s->scope, CONFIG_SCOPE_ABSTRACT_UNIX);
	expect_list(&s->env, (const char *const[]){"A=1", "B=x=y", NULL});
	expect_list(&s->after, (const char *const[]){"db", "cache", NULL});
	expect_list(&s->requires, (const char *const[]){"db", NULL});
	ck_assert_int_eq(s->probe, CONFIG_PROBE_HTTP);
	expect_list(&s->probe_args,
	    (const char *const[]){"http://127.0.0.1:80/", "200", "ok", NULL});
	ck_assert_uint_eq(s->probe_timeout_ms, 300);
	ck_assert_uint_eq(s->probe_interval_ms, 40);
	ck_assert(!s->required);
	ck_assert(s->main);
	ck_assert_int_eq(s->restart, CONFIG_RESTART_ON_FAILURE);
	ck_assert_uint_eq(s->backoff_min_ms, 7);
	ck_assert_uint_eq(s->backoff_max_ms, 70);
	ck_assert_uint_eq(s->backoff_reset_ms, 700);
	ck_assert_uint_eq(s->max_deaths, 9);
	ck_assert_uint_eq(s->death_window_ms, 9000);
	ck_assert_uint_eq(s->retry_failed_ms, 60000);
	ck_assert_int_eq(s->stop_signal, SIGINT);
	ck_assert_uint_eq(s->stop_timeout_ms, 1500);

	s = service_named(&cfg, "db");
	ck_assert_int_eq(s->line, 45);
	ck_assert_int_eq(s->restart, CONFIG_RESTART_NEVER);
	ck_assert_int_eq(s->probe, CONFIG_PROBE_NONE);

	s = service_named(&cfg, "cache");
	ck_assert(s->check);
	ck_assert_int_eq(s->line, 48);
	ck_assert_ptr_null(s->argv);
	ck_assert_int_eq(s->probe, CONFIG_PROBE_TCP);
	expect_list(
	    &s->probe_args, (const char *const[]){"127.0.0.1:6379", NULL});
	ck_assert(!s->required);
	config_free(&cfg);
}
END_TEST

/* What a file that leaves every key out gets, and what config_finish
 * derives from the state directory unless it was set. */
START_TEST(test_defaults)
{
	const struct config_service *s;
	struct config cfg;

	parse_good(
	    &cfg, "[service s]\ncommand = s\n[check c]\nready = report\n");
	ck_assert_str_eq(cfg.state_dir, "/var/lib/berth");
	ck_assert_str_eq(cfg.token_file, "/var/lib/berth/token");
	ck_assert_str_eq(cfg.socket, "/var/lib/berth/berthd.sock");
	ck_assert_str_eq(cfg.listen, "127.0.0.1:7100");
	ck_assert_str_eq(cfg.gateway_command, "berth-gateway");
	ck_assert_uint_eq(cfg.client_queue, 8u << 20);
	ck_assert_uint_eq(cfg.client_stall_ms, 10000);
	ck_assert_ptr_null(cfg.vnc);
	ck_assert_ptr_null(cfg.novnc_dir);
	ck_assert_ptr_null(cfg.cdp);
	ck_assert_ptr_null(cfg.cdp_relay_listen);
	ck_assert_ptr_null(cfg.public_url);
	ck_assert_ptr_null(cfg.preview_listen);
	ck_assert_ptr_null(cfg.preview_url);
	ck_assert_ptr_null(cfg.preview_domain);
	ck_assert_uint_eq(cfg.grant_max_ttl_s, 3600);
	ck_assert_uint_eq(cfg.journal_max_bytes, 64u << 20);
	ck_assert_uint_eq(cfg.journal_segment_bytes, 4u << 20);
	ck_assert(!cfg.journal_sync);
	ck_assert_uint_eq(cfg.nlabels, 0);
	s = service_named(&cfg, "s");
	ck_assert_ptr_null(s->user);
	ck_assert_ptr_null(s->group);
	ck_assert_ptr_null(s->cwd);
	ck_assert_uint_eq(s->scope, 0);
	ck_assert_uint_eq(s->env.n, 0);
	ck_assert_uint_eq(s->after.n, 0);
	ck_assert_uint_eq(s->requires.n, 0);
	ck_assert_int_eq(s->probe, CONFIG_PROBE_NONE);
	ck_assert_uint_eq(s->probe_timeout_ms, 2000);
	ck_assert_uint_eq(s->probe_interval_ms, 1000);
	ck_assert(s->required);
	ck_assert(!s->main);
	ck_assert_int_eq(s->restart, CONFIG_RESTART_ALWAYS);
	ck_assert_uint_eq(s->backoff_min_ms, 100);
	ck_assert_uint_eq(s->backoff_max_ms, 5000);
	ck_assert_uint_eq(s->backoff_reset_ms, 10000);
	ck_assert_uint_eq(s->max_deaths, 5);
	ck_assert_uint_eq(s->death_window_ms, 60000);
	ck_assert_uint_eq(s->retry_failed_ms, 300000);
	ck_assert_int_eq(s->stop_signal, SIGTERM);
	ck_assert_uint_eq(s->stop_timeout_ms, 5000);
	s = service_named(&cfg, "c");
	ck_assert(s->check);
	ck_assert_int_eq(s->probe, CONFIG_PROBE_REPORT);
	ck_assert(s->required);
	config_free(&cfg);

	parse_good(&cfg, "[berthd]\nstate_dir = /s\n");
	ck_assert_str_eq(cfg.token_file, "/s/token");
	ck_assert_str_eq(cfg.socket, "/s/berthd.sock");
	ck_assert_uint_eq(cfg.retry_failed_ms, 300000);
	config_free(&cfg);
}
END_TEST

/* [berthd] retry_failed_ms is the default of every service that sets
 * none, wherever the sections stand; a service's own wins. */
START_TEST(test_retry_default)
{
	struct config cfg;

	parse_good(&cfg,
	    "[service early]\ncommand = e\n"
	    "[berthd]\nretry_failed_ms = 0\n"
	    "[service own]\ncommand = o\nretry_failed_ms = 1000\n"
	    "[service late]\ncommand = l\n");
	ck_assert_uint_eq(cfg.retry_failed_ms, 0);
	ck_assert_uint_eq(service_named(&cfg, "early")->retry_failed_ms, 0);
	ck_assert_uint_eq(service_named(&cfg, "own")->retry_failed_ms, 1000);
	ck_assert_uint_eq(service_named(&cfg, "late")->retry_failed_ms, 0);
	config_free(&cfg);

	parse_good(&cfg,
	    "[berthd]\nretry_failed_ms = 86400000\n"
	    "[service s]\ncommand = s\n");
	ck_assert_uint_eq(service_named(&cfg, "s")->retry_failed_ms, 86400000);
	config_free(&cfg);
}
END_TEST

/* [berthd] ports: auto by default, each of its words taken, anything
 * else refused with the words it may be. */
START_TEST(test_ports)
{
	static const struct bad cases[] = {
	    {"[berthd]\nports = on\n", 2, {"ports must be auto, proc or off"}},
	    {"[berthd]\nports =\n", 2, {"ports must be auto, proc or off"}},
	    {"[berthd]\nports = AUTO\n", 2,
	        {"ports must be auto, proc or off"}},
	};
	struct config cfg;

	parse_good(&cfg, "[berthd]\n");
	ck_assert_int_eq(cfg.ports, CONFIG_PORTS_AUTO);
	config_free(&cfg);
	parse_good(&cfg, "[berthd]\nports = proc\n");
	ck_assert_int_eq(cfg.ports, CONFIG_PORTS_PROC);
	config_free(&cfg);
	parse_good(&cfg, "[berthd]\nports = off\n");
	ck_assert_int_eq(cfg.ports, CONFIG_PORTS_OFF);
	config_free(&cfg);
	parse_good(&cfg, "[berthd]\nports = off\nports = auto\n");
	ck_assert_int_eq(cfg.ports, CONFIG_PORTS_AUTO);
	config_free(&cfg);
	expect_errors(cases, sizeof cases / sizeof cases[0], false);
}
END_TEST

/* Comments and blank lines anywhere, blanks around keys, values and
 * section names, CRLF line ends, and a last line without its newline. */
START_TEST(test_layout)
{
	static const char text[] = "; a comment\r\n"
	                           "\t# another\r\n"
	                           "\r\n"
	                           "  [labels]  \r\n"
	                           "\tk1\t=\tv # not a comment\r\n"
	                           "k2=a = b\r\n"
	                           "k3 =\r\n"
	                           "[service   spaced]\n"
	                           "command=echo hi\n"
	                           "restart =never";
	const struct config_service *s;
	struct config cfg;

	parse_good(&cfg, text);
	ck_assert_uint_eq(cfg.nlabels, 3);
	ck_assert_str_eq(cfg.labels[0].key, "k1");
	ck_assert_str_eq(cfg.labels[0].value, "v # not a comment");
	ck_assert_str_eq(cfg.labels[1].key, "k2");
	ck_assert_str_eq(cfg.labels[1].value, "a = b");
	ck_assert_str_eq(cfg.labels[2].key, "k3");
	ck_assert_str_eq(cfg.labels[2].value, "");
	s = service_named(&cfg, "spaced");
	ck_assert_int_eq(s->line, 8);
	expect_strv(s->argv, (const char *const[]){"echo", "hi", NULL});
	ck_assert_int_eq(s->restart, CONFIG_RESTART_NEVER);
	config_free(&cfg);
}
END_TEST

/* A command is split on blanks, with '...' taken as is, "..." with
 * backslash escapes, and backslashes outside quotes. */
START_TEST(test_command_split)
{
	static const struct {
		const char *value;
		const char *argv[5];
	} cases[] = {
	    {"a  b\tc", {"a", "b", "c", NULL}},
	    {"sh -c 'echo a  b'", {"sh", "-c", "echo a  b", NULL}},
	    {"x 'a\\\"b'", {"x", "a\\\"b", NULL}},
	    {"x \"a \\\"q\\\" \\\\ b\"", {"x", "a \"q\" \\ b", NULL}},
	    {"x a\\ b c\\'d", {"x", "a b", "c'd", NULL}},
	    {"x pre\"mid dle\"'post fix'", {"x", "premid dlepost fix", NULL}},
	    {"x \"\" ''", {"x", "", "", NULL}},
	    {"x \"it's\" 'say \"hi\"'", {"x", "it's", "say \"hi\"", NULL}},
	};
	struct config cfg;
	char *text;
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		text = xasprintf("[service s]\ncommand = %s\n", cases[i].value);
		parse_good(&cfg, text);
		expect_strv(cfg.services[0].argv, cases[i].argv);
		config_free(&cfg);
		free(text);
	}
}
END_TEST

/* Every probe type, with the arguments it takes. */
START_TEST(test_probe_kinds)
{
	static const struct {
		const char *name;
		const char *rest;
		enum config_probe probe;
		const char *args[4];
	} cases[] = {
	    {"tcp", "127.0.0.1:1", CONFIG_PROBE_TCP, {"127.0.0.1:1", NULL}},
	    {"http", "http://h/", CONFIG_PROBE_HTTP, {"http://h/", NULL}},
	    {"http", "http://h/ 204", CONFIG_PROBE_HTTP,
	        {"http://h/", "204", NULL}},
	    {"rfb", "h:5900 1280x720", CONFIG_PROBE_RFB,
	        {"h:5900", "1280x720", NULL}},
	    {"cdp", "h:9222 auth", CONFIG_PROBE_CDP, {"h:9222", "auth", NULL}},
	    {"cdp-ws", "ws://h/", CONFIG_PROBE_CDP_WS, {"ws://h/", NULL}},
	    {"novnc", "http://h/", CONFIG_PROBE_NOVNC, {"http://h/", NULL}},
	    {"notify-fd", "3", CONFIG_PROBE_NOTIFY_FD, {"3", NULL}},
	    {"notify-fd", "255", CONFIG_PROBE_NOTIFY_FD, {"255", NULL}},
	    {"sd_notify", "", CONFIG_PROBE_SD_NOTIFY, {NULL}},
	    {"exec", "test -e '/a b'", CONFIG_PROBE_EXEC,
	        {"test", "-e", "/a b", NULL}},
	    {"report", "", CONFIG_PROBE_REPORT, {NULL}},
	};
	const struct config_service *s;
	struct config cfg;
	char *text;
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		text = xasprintf("[service s]\ncommand = s\nready = %s %s\n",
		    cases[i].name, cases[i].rest);
		parse_good(&cfg, text);
		s = &cfg.services[0];
		ck_assert_int_eq(s->probe, cases[i].probe);
		ck_assert_str_eq(config_probe_name(s->probe), cases[i].name);
		expect_list(&s->probe_args, cases[i].args);
		if (s->probe == CONFIG_PROBE_NOTIFY_FD)
			ck_assert_int_eq(s->notify_fd, atoi(cases[i].args[0]));
		config_free(&cfg);
		free(text);
	}
}
END_TEST

/* Values at the edges of what each key takes are taken as written. */
START_TEST(test_limits_taken)
{
	const struct config_service *s;
	struct config cfg;

	parse_good(&cfg,
	    "[gateway]\nlisten = [::1]:65535\nclient_queue = 64K\n"
	    "vnc = h:1\n[journal]\nmax_bytes = 65536\nsegment_bytes = 16k\n");
	ck_assert_str_eq(cfg.listen, "[::1]:65535");
	ck_assert_uint_eq(cfg.client_queue, 65536);
	ck_assert_str_eq(cfg.vnc, "h:1");
	ck_assert_uint_eq(cfg.journal_max_bytes, 65536);
	ck_assert_uint_eq(cfg.journal_segment_bytes, 16384);
	config_free(&cfg);

	parse_good(&cfg,
	    "[service a]\ncommand = a\nmax_deaths = 1\nbackoff_min_ms = 0\n"
	    "backoff_max_ms = 0\nstop_signal = 9\n"
	    "retry_failed_ms = 1000\n"
	    "[service b]\ncommand = b\nmax_deaths = 1000\n"
	    "backoff_max_ms = 86400000\nstop_timeout_ms = 86400000\n"
	    "stop_signal = SIGHUP\nretry_failed_ms = 86400000\n"
	    "[service c]\ncommand = c\nmax_deaths = unlimited\n"
	    "retry_failed_ms = 0\n");
	s = service_named(&cfg, "a");
	ck_assert_uint_eq(s->max_deaths, 1);
	ck_assert_uint_eq(s->retry_failed_ms, 1000);
	ck_assert_uint_eq(s->backoff_min_ms, 0);
	ck_assert_uint_eq(s->backoff_max_ms, 0);
	ck_assert_int_eq(s->stop_signal, SIGKILL);
	s = service_named(&cfg, "b");
	ck_assert_uint_eq(s->max_deaths, 1000);
	ck_assert_uint_eq(s->backoff_max_ms, 86400000);
	ck_assert_uint_eq(s->stop_timeout_ms, 86400000);
	ck_assert_int_eq(s->stop_signal, SIGHUP);
	ck_assert_uint_eq(s->retry_failed_ms, 86400000);
	s = service_named(&cfg, "c");
	ck_assert_uint_eq(s->max_deaths, 0);
	ck_assert_uint_eq(s->retry_failed_ms, 0);
	config_free(&cfg);
}
END_TEST

/* Errors in sections and their headers, and lines that are no key. */
START_TEST(test_syntax_errors)
{
	static const struct bad cases[] = {
	    {"[berthd]\n# c\n\n[bogus]\nx = 1\n", 4,
	        {"unknown section [bogus]"}},
	    {"[service]\n", 1, {"unknown section [service]"}},
	    {"[berthd] x\n", 1, {"section header must end with ]"}},
	    {"[berthd\n", 1, {"section header must end with ]"}},
	    {"state_dir = /x\n", 1, {"\"state_dir\" outside any section"}},
	    {"[journal]\nsync yes\n", 2,
	        {"expected \"key = value\" or [section]"}},
	    {"[labels]\n  = v\n", 2, {"missing key before ="}},
	    {"[labels]\na = 1\n\n\nbroken\n", 5, {"key = value"}},
	    {"[labels]\na = 1\r\nbroken", 3, {"key = value"}},
	};

	expect_errors(cases, sizeof cases / sizeof cases[0], false);
}
END_TEST

START_TEST(test_unknown_keys)
{
	static const struct bad cases[] = {
	    {"[berthd]\nstate = /x\n", 2,
	        {"unknown key \"state\" in [berthd]"}},
	    {"[gateway]\nclient_queue = 1M\nlistne = 127.0.0.1:1\n", 3,
	        {"unknown key \"listne\" in [gateway]"}},
	    {"[journal]\nrotate = 1\n", 2,
	        {"unknown key \"rotate\" in [journal]"}},
	    {"[service web]\ncommand = x\ncomand = y\n", 3,
	        {"unknown key \"comand\" in [service web]"}},
	    {"[check up]\nready = report\ncommand = x\n", 3,
	        {"unknown key \"command\" in [check up]", "a check takes"}},
	    {"[check up]\nrestart = never\n", 2,
	        {"unknown key \"restart\" in [check up]"}},
	};

	expect_errors(cases, sizeof cases / sizeof cases[0], false);
}
END_TEST

START_TEST(test_bad_values)
{
	static const struct bad cases[] = {
	    {"[berthd]\nstate_dir =\n", 2, {"empty value"}},
	    {"[service s]\ncwd =   \n", 2, {"empty value"}},
	    {"[journal]\nmax_bytes = 12Q\n", 2,
	        {"\"12Q\" is not a size of at least 65536 bytes"}},
	    {"[journal]\nmax_bytes = 1.5M\n", 2, {"\"1.5M\" is not a size"}},
	    {"[journal]\nmax_bytes = -1M\n", 2, {"\"-1M\" is not a size"}},
	    {"[journal]\nmax_bytes = M\n", 2, {"\"M\" is not a size"}},
	    {"[journal]\nmax_bytes = 99999999999999999999\n", 2,
	        {"is not a size"}},
	    {"[journal]\nmax_bytes = 17179869184G\n", 2, {"is not a size"}},
	    {"[journal]\nmax_bytes = 63k\n", 2,
	        {"\"63k\" is not a size of at least 65536 bytes"}},
	    {"[journal]\nsegment_bytes = 16383\n", 2, {"at least 16384 bytes"}},
	    {"[gateway]\nclient_queue = 1K\n", 2,
	        {"\"1K\" is not a size of at least 65536 bytes"}},
	    {"[gateway]\nclient_stall_ms = 0\n", 2,
	        {"client_stall_ms must be 1-86400000 milliseconds"}},
	    {"[gateway]\nclient_stall_ms = 2s\n", 2,
	        {"client_stall_ms must be 1-86400000 milliseconds"}},
	    {"[gateway]\nlisten = 127.0.0.1:70000\n", 2,
	        {"listen \"127.0.0.1:70000\" is not ADDR:PORT", "1-65535"}},
	    {"[gateway]\nlisten = 127.0.0.1\n", 2, {"is not ADDR:PORT"}},
	    {"[gateway]\nlisten = :80\n", 2, {"is not ADDR:PORT"}},
	    {"[gateway]\nlisten = h:\n", 2, {"is not ADDR:PORT"}},
	    {"[gateway]\nlisten = h:0\n", 2, {"is not ADDR:PORT"}},
	    {"[gateway]\nlisten = h:80x\n", 2, {"is not ADDR:PORT"}},
	    {"[gateway]\nvnc = localhost\n", 2,
	        {"vnc \"localhost\" is not ADDR:PORT"}},
	    {"[gateway]\ncdp = h:99999\n", 2,
	        {"cdp \"h:99999\" is not ADDR:PORT"}},
	    {"[gateway]\ncdp_relay_listen = h\n", 2,
	        {"cdp_relay_listen \"h\" is not ADDR:PORT"}},
	    {"[gateway]\npreview_listen = h:0\n", 2,
	        {"preview_listen \"h:0\" is not ADDR:PORT"}},
	    {"[gateway]\npublic_url = ftp://h\n", 2,
	        {"public_url \"ftp://h\" is not an http:// or https:// URL"}},
	    {"[gateway]\npublic_url = http://\n", 2, {"with a host"}},
	    {"[gateway]\npublic_url = http:///x\n", 2, {"with a host"}},
	    {"[gateway]\npublic_url = http://h/?a=b\n", 2, {"no query"}},
	    {"[gateway]\npreview_url = http://h x\n", 2, {"no query"}},
	    {"[gateway]\npreview_domain = a..b\n", 2,
	        {"preview_domain \"a..b\" is not a DNS name"}},
	    {"[gateway]\npreview_domain = a_b.c\n", 2, {"is not a DNS name"}},
	    {"[gateway]\npreview_domain = .a\n", 2, {"is not a DNS name"}},
	    {"[gateway]\npreview_domain = a.\n", 2, {"is not a DNS name"}},
	    {"[gateway]\ngrant_max_ttl_s = 0\n", 2,
	        {"grant_max_ttl_s must be 1-2592000 seconds"}},
	    {"[gateway]\ngrant_max_ttl_s = 2592001\n", 2,
	        {"grant_max_ttl_s must be"}},
	    {"[gateway]\ngrant_max_ttl_s = 1K\n", 2,
	        {"grant_max_ttl_s must be"}},
	    {"[journal]\nsync = maybe\n", 2, {"sync must be yes or no"}},
	    {"[service s]\nrequired = perhaps\n", 2,
	        {"required must be yes or no"}},
	    {"[service s]\nmain = 2\n", 2, {"main must be yes or no"}},
	    {"[service s]\nscope = abstract\n", 2,
	        {"scope must be abstract-unix or none, not \"abstract\""}},
	    {"[service s]\nrestart = sometimes\n", 2,
	        {"restart must be always, on-failure or never"}},
	    {"[service s]\nmax_deaths = 0\n", 2,
	        {"max_deaths must be 1-1000 or unlimited"}},
	    {"[service s]\nmax_deaths = 1001\n", 2,
	        {"max_deaths must be 1-1000 or unlimited"}},
	    {"[service s]\nmax_deaths = 1K\n", 2,
	        {"max_deaths must be 1-1000 or unlimited"}},
	    {"[service s]\nmax_deaths = Unlimited\n", 2,
	        {"max_deaths must be 1-1000 or unlimited"}},
	    {"[service s]\nretry_failed_ms = 999\n", 2,
	        {"retry_failed_ms must be 0 (never) or 1000-86400000 "
	         "milliseconds"}},
	    {"[service s]\nretry_failed_ms = 86400001\n", 2,
	        {"retry_failed_ms must be 0 (never) or 1000-86400000"}},
	    {"[service s]\nretry_failed_ms = 5m\n", 2,
	        {"retry_failed_ms must be 0 (never)"}},
	    {"[berthd]\nretry_failed_ms = 1\n", 2,
	        {"retry_failed_ms must be 0 (never) or 1000-86400000"}},
	    {"[check c]\nready = report\nretry_failed_ms = 1000\n", 3,
	        {"unknown key \"retry_failed_ms\" in [check c]"}},
	    {"[service s]\nstop_signal = BOGUS\n", 2,
	        {"stop_signal \"BOGUS\" is not a signal (TERM, INT, HUP, "
	         "QUIT, KILL, USR1, USR2, WINCH, TSTP, CONT, ALRM, PIPE, CHLD, "
	         "STOP, TTIN, TTOU, ... or a number)"}},
	    {"[berthd]\nforward_signals = HUP BOGUS\n", 2,
	        {"forward_signals: \"BOGUS\" is not a signal"}},
	    {"[berthd]\nforward_signals = HUP TERM\n", 2,
	        {"forward_signals: berthd keeps TERM for itself"}},
	    {"[berthd]\nforward_signals = SIGCHLD\n", 2,
	        {"berthd keeps SIGCHLD for itself"}},
	    {"[berthd]\nforward_signals = 9\n", 2,
	        {"berthd keeps 9 for itself"}},
	    {"[berthd]\nforward_signals = SEGV\n", 2,
	        {"berthd keeps SEGV for itself"}},
	    {"[berthd]\nforward_signals = 65\n", 2, {"\"65\" is not a signal"}},
	    {"[service s]\nexit_codes_ok = 0 256\n", 2,
	        {"exit_codes_ok: \"256\" is not an exit code (0-255)"}},
	    {"[service s]\nexit_codes_ok = -1\n", 2,
	        {"\"-1\" is not an exit code"}},
	    {"[service s]\nexit_codes_ok = 1x\n", 2,
	        {"\"1x\" is not an exit code"}},
	    {"[service s]\nexit_codes_ok = 99999999999999999999\n", 2,
	        {"is not an exit code"}},
	    {"[service s]\nforward = sometimes\n", 2,
	        {"forward must be yes or no"}},
	    {"[service s]\nbackoff_min_ms = 10s\n", 2,
	        {"backoff_min_ms must be milliseconds (0-86400000)"}},
	    {"[service s]\nstop_timeout_ms = 86400001\n", 2,
	        {"stop_timeout_ms must be milliseconds"}},
	    {"[service s]\nready_timeout_ms = 1K\n", 2,
	        {"ready_timeout_ms must be milliseconds"}},
	    {"[check c]\nready_interval_ms = -5\n", 2,
	        {"ready_interval_ms must be milliseconds"}},
	    {"[service s]\ndeath_window_ms = x\n", 2,
	        {"death_window_ms must be milliseconds"}},
	    {"[service s]\nbackoff_reset_ms = 1.5\n", 2,
	        {"backoff_reset_ms must be milliseconds"}},
	    {"[service s]\nbackoff_max_ms = \n", 2,
	        {"backoff_max_ms must be milliseconds"}},
	};

	expect_errors(cases, sizeof cases / sizeof cases[0], false);
}
END_TEST

/* Commands, env lines and dependency lists. */
START_TEST(test_service_errors)
{
	static const struct bad cases[] = {
	    {"[service s]\ncommand = a\ncommand = b\n", 3,
	        {"command set twice"}},
	    {"[service s]\nrestart = never\ncommand = /bin/sh -c \"echo hi\n",
	        3, {"unterminated \" quote in command"}},
	    {"[service s]\ncommand = x 'a b\n", 2,
	        {"unterminated ' quote in command"}},
	    {"[service s]\ncommand = x \"a\\\"\n", 2,
	        {"unterminated \" quote"}},
	    {"[service s]\ncommand =\n", 2, {"empty command"}},
	    {"[service s]\nenv = novalue\n", 2, {"env wants KEY=VALUE"}},
	    {"[service s]\nenv = =x\n", 2, {"env wants KEY=VALUE"}},
	    {"[service s]\nenv = A B=c\n", 2, {"env wants KEY=VALUE"}},
	    {"[service s]\nafter = a\nafter = b\n", 3, {"after set twice"}},
	    {"[service s]\nrequires = a\n\nrequires = a\n", 4,
	        {"requires set twice"}},
	    {"[service s]\nafter = 'a\n", 2, {"unterminated ' quote"}},
	};

	expect_errors(cases, sizeof cases / sizeof cases[0], false);
}
END_TEST

START_TEST(test_ready_errors)
{
	static const struct bad cases[] = {
	    {"[service s]\nready = report\nready = report\n", 3,
	        {"ready set twice"}},
	    {"[service s]\nready = pigeon 1\n", 2,
	        {"unknown readiness probe \"pigeon 1\"", "(tcp, http,"}},
	    {"[service s]\nready = none\n", 2, {"unknown readiness probe"}},
	    {"[service s]\nready = tcp\n", 2,
	        {"ready = tcp takes 1 to 1 arguments, not 0"}},
	    {"[service s]\nready = http u 200 body extra\n", 2,
	        {"ready = http takes 1 to 3 arguments, not 4"}},
	    {"[service s]\nready = report now\n", 2,
	        {"ready = report takes 0 to 0 arguments, not 1"}},
	    {"[service s]\nready = exec\n", 2,
	        {"ready = exec takes 1 to 63 arguments, not 0"}},
	    {"[service s]\nready = cdp h:1 token\n", 2,
	        {"ready = cdp HOST:PORT [auth]: \"token\" is not \"auth\""}},
	    {"[service s]\nready = notify-fd 2\n", 2,
	        {"notify-fd wants an fd number in 3-255"}},
	    {"[service s]\nready = notify-fd 256\n", 2,
	        {"notify-fd wants an fd number in 3-255"}},
	    {"[service s]\nready = notify-fd 3x\n", 2,
	        {"notify-fd wants an fd number in 3-255"}},
	    {"[check c]\nready = notify-fd 3\n", 2,
	        {"a check has no process to notify; ready = notify-fd is for "
	         "services"}},
	    {"[check c]\nready = sd_notify\n", 2,
	        {"ready = sd_notify is for services"}},
	    {"[service s]\nready = exec 'unterminated\n", 2,
	        {"unterminated ' quote"}},
	};

	expect_errors(cases, sizeof cases / sizeof cases[0], false);
}
END_TEST

/* Names of services, checks and labels, and names used twice. */
START_TEST(test_name_errors)
{
	static const struct bad cases[] = {
	    {"[service a b]\n", 1,
	        {"service name \"a b\" must be 1-64 of A-Z a-z 0-9 . _ -"}},
	    {"[check ]\n", 1, {"check name \"\" must be 1-64 of"}},
	    {"[service x/y]\n", 1, {"service name \"x/y\""}},
	    {"[service gateway]\n", 1,
	        {"\"gateway\" is berth's own service; configure it in "
	         "[gateway]"}},
	    {"[service a]\ncommand = true\n\n[service a]\ncommand = true\n", 4,
	        {"\"a\" defined twice"}},
	    {"[service a]\ncommand = true\n[check a]\nready = report\n", 3,
	        {"\"a\" defined twice (services and checks share one set of "
	         "names)"}},
	    {"[labels]\nbad key! = v\n", 2,
	        {"label key \"bad key!\" must be 1-256 of A-Z a-z 0-9 . _ - "
	         "/"}},
	    {"[labels]\na = 1\nb = 2\na = 3\n", 4, {"label \"a\" set twice"}},
	};

	expect_errors(cases, sizeof cases / sizeof cases[0], false);
}
END_TEST

/* A growing text, for the limits. */
struct text {
	char *s;
	size_t len;
};

static void __attribute__((format(printf, 2, 3)))
text_add(struct text *t, const char *fmt, ...)
{
	va_list ap;
	char *more;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&more, fmt, ap);
	va_end(ap);
	ck_assert_int_ge(n, 0);
	t->s = realloc(t->s, t->len + (size_t)n + 1);
	ck_assert_ptr_nonnull(t->s);
	memcpy(t->s + t->len, more, (size_t)n + 1);
	t->len += (size_t)n;
	free(more);
}

/* A limit: head, n items (numbered, if they must differ), tail. At max
 * items the text parses; at one more it fails at line, saying says. */
struct limit {
	const char *head;
	const char *item;
	bool numbered;
	const char *item_tail;
	const char *tail;
	size_t max;
	int line;
	const char *says;
};

static char *
limit_text(const struct limit *l, size_t n, bool padded)
{
	struct text t = {0};
	size_t i;

	text_add(&t, "%s%s", padded ? pad : "", l->head);
	for (i = 0; i < n; i++) {
		if (l->numbered)
			text_add(&t, "%s%zu%s", l->item, i, l->item_tail);
		else
			text_add(&t, "%s%s", l->item, l->item_tail);
	}
	text_add(&t, "%s", l->tail);
	return t.s;
}

START_TEST(test_limits)
{
	static const struct limit cases[] = {
	    {"[labels]\n#", "x", false, "", "\n", CONFIG_MAX_LINE - 1, 2,
	        "line longer than 8192 bytes"},
	    {"[service s]\ncwd = ", "v", false, "", "\n", CONFIG_MAX_VALUE, 2,
	        "value longer than 4096 bytes"},
	    {"[labels]\n", "k", false, "", " = v\n", CONFIG_MAX_LABEL, 2,
	        "must be 1-256 of A-Z a-z 0-9 . _ - /"},
	    {"[labels]\nk = ", "v", false, "", "\n", CONFIG_MAX_LABEL, 2,
	        "label value longer than 256 bytes"},
	    {"[service ", "n", false, "", "]\n", CONFIG_MAX_NAME, 1,
	        "must be 1-64 of A-Z a-z 0-9 . _ -"},
	    {"[service s]\ncommand =", " a", true, "", "\n", CONFIG_MAX_ARGS, 2,
	        "command has more than 64 arguments"},
	    {"[labels]\n", "l", true, " = v\n", "", CONFIG_MAX_LABELS, 66,
	        "more than 64 labels"},
	    {"", "[service s", true, "]\n", "", CONFIG_MAX_SERVICES, 65,
	        "more than 64 services"},
	    {"[service s]\n", "env = E", true, "=v\n", "", CONFIG_MAX_ENV, 66,
	        "more than 64 env lines"},
	};
	struct config cfg;
	char *text, *cause;
	size_t i, padded;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++)
		for (padded = 0; padded < 2; padded++) {
			text = limit_text(&cases[i], cases[i].max, padded);
			cause = NULL;
			config_init(&cfg);
			ck_assert_msg(config_parse_string(
			                  &cfg, text, "t.conf", &cause) == 0,
			    "case %zu: %s", i, cause);
			config_free(&cfg);
			free(text);

			text = limit_text(&cases[i], cases[i].max + 1, padded);
			expect_error(text,
			    cases[i].line + (padded ? PAD_LINES : 0),
			    &cases[i].says, 1, false);
			free(text);
		}
}
END_TEST

/* What only the whole file tells: each names the line of the section it
 * is about, as the file was read. */
START_TEST(test_finish_errors)
{
	static const struct bad cases[] = {
	    {"[labels]\nimage = x\n\n[service lonely]\nrestart = never\n", 4,
	        {"service \"lonely\" has no command"}},
	    {"[service a]\ncommand = a\n[check c]\nrequired = no\n", 3,
	        {"check \"c\" has no \"ready = PROBE ...\" line"}},
	    {"[service s]\ncommand = x\nbackoff_min_ms = 10\nbackoff_max_ms = "
	     "5\n",
	        1, {"service \"s\": backoff_min_ms exceeds backoff_max_ms"}},
	    {"[service t]\ncommand = x\n\n[service s]\ncommand = x\n"
	     "backoff_min_ms = 6000\n",
	        4, {"service \"s\": backoff_min_ms exceeds backoff_max_ms"}},
	    {"[service a]\ncommand = x\n\n[service b]\ncommand = x\n"
	     "after = a zz\n",
	        4, {"service \"b\" depends on unknown service \"zz\""}},
	    {"[check a]\nready = report\nrequires = nope\n", 1,
	        {"service \"a\" depends on unknown service \"nope\""}},
	    {"[service a]\ncommand = x\nmain = yes\n\n[service b]\n"
	     "command = x\nmain = yes\n",
	        5, {"services \"a\" and \"b\" are both main"}},
	    {"[gateway]\ncdp_relay_listen = 0.0.0.0:9223\n", 0,
	        {"[gateway] cdp_relay_listen needs cdp"}},
	    {"[gateway]\npreview_domain = p.example\n", 0,
	        {"preview_url and preview_domain need preview_listen"}},
	};

	expect_errors(cases, sizeof cases / sizeof cases[0], true);
}
END_TEST

/* Text from memory: what config_finish finds is named by the name given,
 * as the parser's own errors are. */
START_TEST(test_finish_names_text)
{
	struct config cfg;
	char *cause = NULL;

	config_init(&cfg);
	ck_assert_int_eq(
	    config_parse_string(&cfg, "[service a]\ncommand = x\nafter = zz\n",
	        "inline.conf", &cause),
	    0);
	ck_assert_int_eq(config_finish(&cfg, &cause), -1);
	ck_assert_str_eq(cause,
	    "inline.conf:1: service \"a\" depends on unknown service \"zz\"");
	free(cause);
	config_free(&cfg);
}
END_TEST

/* A cycle is spelt out from the first service on it that the search met,
 * whose section's line is named, whatever leads into it. */
START_TEST(test_cycles)
{
	static const struct bad cases[] = {
	    {"[service a]\ncommand = x\nafter = a\n", 1,
	        {"dependency cycle: a -> a"}},
	    {"[service x]\ncommand = x\n[service a]\ncommand = x\nafter = b\n"
	     "[service b]\ncommand = x\nrequires = a\n",
	        3, {"dependency cycle: a -> b -> a"}},
	    {"[service top]\ncommand = x\nafter = a\n\n"
	     "[service a]\ncommand = x\nafter = b\n\n"
	     "[check b]\nready = report\nafter = c\n\n"
	     "[service c]\ncommand = x\nrequires = x a\n\n"
	     "[service x]\ncommand = x\n",
	        5, {"dependency cycle: a -> b -> c -> a"}},
	    {"[service a]\ncommand = x\n[service b]\ncommand = x\nafter = a c\n"
	     "[service c]\ncommand = x\nafter = d\n[service d]\n"
	     "command = x\nafter = c\n",
	        6, {"dependency cycle: c -> d -> c"}},
	};

	expect_errors(cases, sizeof cases / sizeof cases[0], true);
}
END_TEST

/* The socket path, set or derived from the state directory, must fit a
 * sockaddr_un: 107 bytes do, 108 do not. */
START_TEST(test_socket_path_length)
{
	struct config cfg;
	char *text, *cause = NULL;
	char dir[109];

	/* A path of 107 bytes, then of 108. */
	memset(dir, 's', sizeof dir - 1);
	dir[0] = '/';
	dir[107] = '\0';
	text = xasprintf("[berthd]\nsocket = %s\n", dir);
	parse_good(&cfg, text);
	config_free(&cfg);
	free(text);

	dir[107] = 's';
	dir[108] = '\0';
	text = xasprintf("[berthd]\nsocket = %s\n", dir);
	config_init(&cfg);
	ck_assert_int_eq(config_parse_string(&cfg, text, "t.conf", &cause), 0);
	ck_assert_int_eq(config_finish(&cfg, &cause), -1);
	ck_assert_ptr_nonnull(strstr(cause, "is longer than 107 bytes"));
	ck_assert_ptr_nonnull(strstr(cause, dir));
	free(cause);
	config_free(&cfg);
	free(text);

	/* <dir>/berthd.sock: 108 bytes from a 96-byte state directory. */
	dir[96] = '\0';
	text = xasprintf("[berthd]\nstate_dir = %s\n", dir);
	config_init(&cfg);
	ck_assert_int_eq(config_parse_string(&cfg, text, "t.conf", &cause), 0);
	ck_assert_int_eq(config_finish(&cfg, &cause), -1);
	ck_assert_ptr_nonnull(strstr(cause, "/berthd.sock\" is longer than"));
	free(cause);
	config_free(&cfg);
	free(text);
}
END_TEST

/* config_load reads the file it is given and names it in messages. */
START_TEST(test_load)
{
	static const char text[] =
	    "[labels]\na = 1\n\n[service s]\ncommand = s\n";
	char *dir = scratch_make("test_config"), *path, *cause = NULL;
	struct config cfg;

	path = write_file(dir, "berth.conf", text, sizeof text - 1);
	config_init(&cfg);
	ck_assert_msg(config_load(&cfg, path, &cause) == 0, "%s", cause);
	ck_assert_str_eq(cfg.path, path);
	ck_assert_uint_eq(cfg.nlabels, 1);
	ck_assert_int_eq(cfg.services[0].line, 4);
	config_free(&cfg);
	free(path);
	scratch_remove(dir);
}
END_TEST

/* path, loaded, must be refused with the message path + says. */
static void
expect_load_refused(const char *path, const char *says)
{
	struct config cfg;
	char *cause = NULL, *want = xasprintf("%s%s", path, says);

	config_init(&cfg);
	ck_assert_int_eq(config_load(&cfg, path, &cause), -1);
	ck_assert_str_eq(cause, want);
	free(want);
	free(cause);
	config_free(&cfg);
}

/* What cannot be a config file is refused before it is parsed. */
START_TEST(test_load_refused)
{
	const size_t max = 1024 * 1024;
	char *dir = scratch_make("test_config"), *big = xmalloc(max + 1);
	char *path, *cause = NULL, *says;
	struct config cfg;
	size_t i;

	/* 1 MiB of comment lines is taken; a byte more is not. */
	memset(big, '#', max + 1);
	for (i = 100; i < max; i += 100)
		big[i] = '\n';
	path = write_file(dir, "big.conf", big, max);
	config_init(&cfg);
	ck_assert_msg(config_load(&cfg, path, &cause) == 0, "%s", cause);
	config_free(&cfg);
	free(path);
	path = write_file(dir, "big.conf", big, max + 1);
	expect_load_refused(path, ": larger than 1 MiB");
	free(path);
	free(big);

	path = write_file(dir, "nul.conf", "[labels]\na = \0\n", 15);
	expect_load_refused(path, ": contains a NUL byte");
	free(path);

	path = xasprintf("%s/absent.conf", dir);
	says = xasprintf(": %s", strerror(ENOENT));
	expect_load_refused(path, says);
	free(says);
	free(path);
	says = xasprintf(": %s", strerror(EISDIR));
	expect_load_refused(dir, says);
	free(says);
	scratch_remove(dir);
}
END_TEST

/* --listen is checked as the file's key is, and replaces it. */
START_TEST(test_set_listen)
{
	struct config cfg;
	char *cause = NULL;

	parse_good(&cfg, "[gateway]\nlisten = 127.0.0.1:1\n");
	ck_assert_int_eq(config_set_listen(&cfg, "0.0.0.0:2", &cause), 0);
	ck_assert_str_eq(cfg.listen, "0.0.0.0:2");
	ck_assert_int_eq(config_set_listen(&cfg, "0.0.0.0:0", &cause), -1);
	ck_assert_str_eq(cause,
	    "--listen \"0.0.0.0:0\" is not ADDR:PORT with a port in 1-65535");
	ck_assert_str_eq(cfg.listen, "0.0.0.0:2");
	free(cause);
	config_free(&cfg);
}
END_TEST

/* forward_signals, forward and exit_codes_ok: what berthd passes on and
 * what counts as success. */
START_TEST(test_signals_and_codes)
{
	const struct config_service *s;
	struct config cfg;

	parse_good(&cfg, "[service a]\ncommand = a\n");
	ck_assert(config_forwards(&cfg, SIGHUP));
	ck_assert(config_forwards(&cfg, SIGUSR1));
	ck_assert(config_forwards(&cfg, SIGUSR2));
	ck_assert(config_forwards(&cfg, SIGWINCH));
	ck_assert(!config_forwards(&cfg, SIGQUIT));
	ck_assert(!config_forwards(&cfg, SIGTERM));
	ck_assert(!config_forwards(&cfg, 0));
	ck_assert(!config_forwards(&cfg, 65));
	s = service_named(&cfg, "a");
	ck_assert(!s->forward);
	ck_assert(config_exit_ok(s, 0));
	ck_assert(!config_exit_ok(s, 1));
	ck_assert(!config_exit_ok(s, 143));
	config_free(&cfg);

	parse_good(&cfg,
	    "[berthd]\nforward_signals = quit SIGUSR2 34 64\n"
	    "[service a]\ncommand = a\nforward = yes\n"
	    "exit_codes_ok = 143 255 64 63\n");
	ck_assert(config_forwards(&cfg, SIGQUIT));
	ck_assert(config_forwards(&cfg, SIGUSR2));
	ck_assert(config_forwards(&cfg, 34));
	ck_assert(config_forwards(&cfg, 64));
	ck_assert(!config_forwards(&cfg, SIGHUP));
	s = service_named(&cfg, "a");
	ck_assert(s->forward);
	ck_assert(!config_exit_ok(s, 0));
	ck_assert(config_exit_ok(s, 143));
	ck_assert(config_exit_ok(s, 255));
	ck_assert(config_exit_ok(s, 64));
	ck_assert(config_exit_ok(s, 63));
	ck_assert(!config_exit_ok(s, 65));
	ck_assert(!config_exit_ok(s, 256));
	ck_assert(!config_exit_ok(s, -1));
	config_free(&cfg);

	parse_good(&cfg, "[berthd]\nforward_signals = none\n");
	ck_assert_uint_eq(cfg.forward_signals, 0);
	config_free(&cfg);
}
END_TEST

START_TEST(test_parse_size)
{
	static const struct {
		const char *s;
		int r;
		size_t v;
	} cases[] = {
	    {"0", 0, 0},
	    {"512", 0, 512},
	    {"8K", 0, 8u << 10},
	    {"8k", 0, 8u << 10},
	    {"3M", 0, 3u << 20},
	    {"3m", 0, 3u << 20},
	    {"2G", 0, (size_t)2 << 30},
	    {"2g", 0, (size_t)2 << 30},
	    {"", -1, 0},
	    {"K", -1, 0},
	    {" 1", -1, 0},
	    {"+1", -1, 0},
	    {"1 ", -1, 0},
	    {"1KB", -1, 0},
	    {"1T", -1, 0},
	    {"1.0", -1, 0},
	    {"18446744073709551615", 0, SIZE_MAX},
	    {"18446744073709551616", -1, 0},
	    {"17179869183G", 0, (size_t)17179869183 << 30},
	    {"17179869184G", -1, 0},
	};
	size_t i, v;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		v = 12345;
		ck_assert_msg(config_parse_size(cases[i].s, &v) == cases[i].r,
		    "\"%s\"", cases[i].s);
		ck_assert_uint_eq(v, cases[i].r == 0 ? cases[i].v : 12345);
	}
}
END_TEST

static const struct config_runtime *
runtime_named(const struct config *cfg, const char *name)
{
	const struct config_runtime *r = config_runtime_find(cfg, name);

	ck_assert_msg(r != NULL, "no runtime \"%s\"", name);
	return r;
}

/* Every key of a [runtime] section lands where it says; a mode absent is
 * not offered, and an empty mode line offers the mode with no arguments. */
START_TEST(test_runtime_keys)
{
	static const char text[] =
	    "[runtime opencode]\n"
	    "command = /opt/bin/opencode\n"
	    "version = --version --json\n"
	    "user = agent\n"
	    "group = staff\n"
	    "workspace = /home/agent/ws\n"
	    "env = HOME=/home/agent\n"
	    "env = A=b=c\n"
	    "secrets = OPENAI_API_KEY ANTHROPIC_API_KEY\n"
	    "tui =\n"
	    "server = serve --hostname 127.0.0.1 --port {port}\n"
	    "server_ready = http http://127.0.0.1:{port}/ 200\n"
	    "server_password_env = OPENCODE_SERVER_PASSWORD\n"
	    "resume = --continue\n"
	    "task = run --format json -- {prompt}\n"
	    "busy = queue\n"
	    "restart = on-failure\n"
	    "backoff_min_ms = 10\n"
	    "backoff_max_ms = 20\n"
	    "stop_timeout_ms = 700\n"
	    "backoff_reset_ms = 900\n"
	    "server_ready_timeout_ms = 1500\n"
	    "[runtime pi]\n"
	    "command = pi\n"
	    "user = agent\n"
	    "workspace = /w\n"
	    "rpc = --mode rpc\n";
	static const char *const version[] = {"--version", "--json", NULL};
	static const char *const server[] = {
	    "serve", "--hostname", "127.0.0.1", "--port", "{port}", NULL};
	static const char *const env[] = {"HOME=/home/agent", "A=b=c", NULL};
	static const char *const secrets[] = {
	    "OPENAI_API_KEY", "ANTHROPIC_API_KEY", NULL};
	static const char *const resume[] = {"--continue", NULL};
	static const char *const rpc[] = {"--mode", "rpc", NULL};
	static const char *const task[] = {
	    "run", "--format", "json", "--", "{prompt}", NULL};
	static const char *const dflt_version[] = {"--version", NULL};
	static const char *const none[] = {NULL};
	const struct config_runtime *r;
	struct config cfg;

	parse_good(&cfg, text);
	ck_assert_uint_eq(cfg.nruntimes, 2);
	r = runtime_named(&cfg, "opencode");
	ck_assert_str_eq(r->command, "/opt/bin/opencode");
	expect_list(&r->version_args, version);
	ck_assert_str_eq(r->user, "agent");
	ck_assert_str_eq(r->group, "staff");
	ck_assert_str_eq(r->workspace, "/home/agent/ws");
	expect_list(&r->env, env);
	expect_list(&r->secrets, secrets);
	ck_assert(r->has_tui && r->has_server && !r->has_rpc && r->has_resume);
	expect_list(&r->tui_args, none);
	expect_list(&r->server_args, server);
	expect_list(&r->resume_args, resume);
	ck_assert_str_eq(r->server_ready, "http http://127.0.0.1:{port}/ 200");
	ck_assert_str_eq(r->server_password_env, "OPENCODE_SERVER_PASSWORD");
	ck_assert(r->has_task);
	expect_list(&r->task_args, task);
	ck_assert_int_eq(r->busy, CONFIG_BUSY_QUEUE);
	ck_assert_int_eq(r->restart, CONFIG_RESTART_ON_FAILURE);
	ck_assert_uint_eq(r->backoff_min_ms, 10);
	ck_assert_uint_eq(r->backoff_max_ms, 20);
	ck_assert_uint_eq(r->stop_timeout_ms, 700);
	ck_assert_uint_eq(r->backoff_reset_ms, 900);
	ck_assert_uint_eq(r->server_ready_timeout_ms, 1500);
	ck_assert_int_eq(r->line, 1);

	r = runtime_named(&cfg, "pi");
	ck_assert_int_eq(r->line, 23);
	ck_assert(
	    !r->has_tui && !r->has_server && r->has_rpc && !r->has_resume);
	expect_list(&r->rpc_args, rpc);
	expect_list(&r->version_args, dflt_version);
	ck_assert_ptr_null(r->group);
	ck_assert_ptr_null(r->server_ready);
	ck_assert_ptr_null(r->server_password_env);
	ck_assert_uint_eq(r->env.n, 0);
	ck_assert_uint_eq(r->secrets.n, 0);
	ck_assert(!r->has_task);
	ck_assert_int_eq(r->busy, CONFIG_BUSY_REJECT);
	ck_assert_int_eq(r->restart, CONFIG_RESTART_NEVER);
	ck_assert_uint_eq(r->stop_timeout_ms, 3000);
	ck_assert_uint_eq(r->backoff_reset_ms, 10000);
	ck_assert_uint_eq(r->server_ready_timeout_ms, 60000);
	ck_assert_ptr_null(config_runtime_find(&cfg, "opencode2"));
	ck_assert_ptr_null(config_runtime_find(&cfg, "open"));
	/* Runtimes are no services: berthd starts none of them at boot. */
	ck_assert_uint_eq(cfg.nservices, 0);
	config_free(&cfg);
}
END_TEST

START_TEST(test_runtime_errors)
{
	static const struct bad cases[] = {
	    {"[runtime a b]\n", 1, {"runtime name \"a b\""}},
	    {"[runtime ]\n", 1, {"runtime name"}},
	    {"[runtime x]\n[runtime x]\n", 2, {"runtime \"x\" defined twice"}},
	    {"[runtime x]\ncolor = red\n", 2,
	        {"unknown key \"color\" in [runtime x]"}},
	    {"[runtime x]\ncommand = a\ncommand = b\n", 3,
	        {"command set twice"}},
	    {"[runtime x]\ncommand =\n", 2, {"empty value"}},
	    {"[runtime x]\ntui = a\ntui = b\n", 3, {"tui set twice"}},
	    {"[runtime x]\nrpc =\nrpc =\n", 3, {"rpc set twice"}},
	    {"[runtime x]\nversion = -V\nversion = -v\n", 3,
	        {"version set twice"}},
	    {"[runtime x]\nserver = serve 'a\n", 2, {"unterminated ' quote"}},
	    {"[runtime x]\nworkspace = ws\n", 2, {"workspace", "absolute"}},
	    {"[runtime x]\nenv = A\n", 2, {"env wants KEY=VALUE"}},
	    {"[runtime x]\nsecrets = GOOD 1BAD\n", 2,
	        {"\"1BAD\" is not a secret name"}},
	    {"[runtime x]\nsecrets = A-B\n", 2, {"\"A-B\" is not a secret"}},
	    {"[runtime x]\nsecrets = A\nsecrets = B\n", 3,
	        {"secrets set twice"}},
	    {"[runtime x]\nserver_password_env = A=B\n", 2,
	        {"server_password_env \"A=B\" is not a variable name"}},
	    {"[runtime x]\nserver_ready = rfb 127.0.0.1:{port}\n", 2,
	        {"unknown probe \"rfb\""}},
	    {"[runtime x]\nserver_ready = tcp 127.0.0.1:80\n", 2,
	        {"tcp wants an address with {port}"}},
	    {"[runtime x]\nserver_ready = exec\n", 2, {"exec wants a command"}},
	    {"[runtime x]\nserver_ready = tcp :{port}\nserver_ready = tcp "
	     ":{port}\n",
	        3, {"server_ready set twice"}},
	    {"[runtime x]\ntasks = yes\n", 2,
	        {"unknown key \"tasks\" in [runtime x]"}},
	    {"[runtime x]\nbusy = wait\n", 2, {"busy must be reject or queue"}},
	    {"[runtime x]\nrestart = sometimes\n", 2,
	        {"restart must be always, on-failure or never"}},
	    {"[runtime x]\nstop_timeout_ms = 1s\n", 2,
	        {"stop_timeout_ms must be milliseconds"}},
	    {"[runtime x]\nready = report\n", 2,
	        {"unknown key \"ready\" in [runtime x]"}},
	};

	expect_errors(cases, sizeof cases / sizeof cases[0], false);
}
END_TEST

/* What a section lacks is only known at its end: config_finish names the
 * section's first line. */
START_TEST(test_runtime_finish_errors)
{
	static const struct bad cases[] = {
	    {"[runtime x]\nuser = u\nworkspace = /w\ntui =\n", 1,
	        {"runtime \"x\" has no command"}},
	    {"[runtime x]\ncommand = c\nworkspace = /w\ntui =\n", 1,
	        {"runtime \"x\" has no user"}},
	    {"[runtime x]\ncommand = c\nuser = u\ntui =\n", 1,
	        {"runtime \"x\" has no workspace"}},
	    {"[runtime x]\ncommand = c\nuser = u\nworkspace = /w\n", 1,
	        {"runtime \"x\" offers no mode"}},
	    {"[runtime x]\ncommand = c\nuser = u\nworkspace = /w\ntui =\n"
	     "server_ready = tcp 127.0.0.1:{port}\n",
	        1, {"server_ready but no server mode"}},
	    {"[runtime x]\ncommand = c\nuser = u\nworkspace = /w\ntui =\n"
	     "server_password_env = P\n",
	        1, {"server_password_env but no server mode"}},
	    {"[runtime x]\ncommand = c\nuser = u\nworkspace = /w\n"
	     "server = serve --port 80\n",
	        1, {"server has no {port}"}},
	    {"[runtime x]\ncommand = c\nuser = u\nworkspace = /w\n"
	     "task = -p --message={prompt}\n",
	        1, {"task's {prompt} must be a whole argument"}},
	    {"[runtime x]\ncommand = c\nuser = u\nworkspace = /w\n"
	     "task = {prompt} {prompt}\n",
	        1, {"task has {prompt} more than once"}},
	    {"[runtime x]\ncommand = c\nuser = u\nworkspace = /w\ntui =\n"
	     "backoff_min_ms = 9\nbackoff_max_ms = 8\n",
	        1, {"backoff_min_ms exceeds backoff_max_ms"}},
	};

	expect_errors(cases, sizeof cases / sizeof cases[0], true);
}
END_TEST

START_TEST(test_runtime_limit)
{
	char *text = xstrdup(""), *next, *cause = NULL;
	struct config cfg;
	int i;

	for (i = 0; i <= CONFIG_MAX_RUNTIMES; i++) {
		next = xasprintf("%s[runtime r%d]\ncommand = c\nuser = u\n"
		                 "workspace = /w\ntui =\n",
		    text, i);
		free(text);
		text = next;
	}
	config_init(&cfg);
	ck_assert_int_eq(config_parse_string(&cfg, text, "t.conf", &cause), -1);
	expect_says(cause,
	    "t.conf:81: ", (const char *const[]){"more than 16 runtimes"}, 1);
	free(cause);
	config_free(&cfg);
	free(text);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("config");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_every_key);
	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_retry_default);
	tcase_add_test(tc, test_ports);
	tcase_add_test(tc, test_layout);
	tcase_add_test(tc, test_command_split);
	tcase_add_test(tc, test_probe_kinds);
	tcase_add_test(tc, test_limits_taken);
	tcase_add_test(tc, test_syntax_errors);
	tcase_add_test(tc, test_unknown_keys);
	tcase_add_test(tc, test_bad_values);
	tcase_add_test(tc, test_service_errors);
	tcase_add_test(tc, test_ready_errors);
	tcase_add_test(tc, test_name_errors);
	tcase_add_test(tc, test_limits);
	tcase_add_test(tc, test_finish_errors);
	tcase_add_test(tc, test_finish_names_text);
	tcase_add_test(tc, test_cycles);
	tcase_add_test(tc, test_socket_path_length);
	tcase_add_test(tc, test_load);
	tcase_add_test(tc, test_load_refused);
	tcase_add_test(tc, test_set_listen);
	tcase_add_test(tc, test_parse_size);
	tcase_add_test(tc, test_signals_and_codes);
	tcase_add_test(tc, test_runtime_keys);
	tcase_add_test(tc, test_runtime_errors);
	tcase_add_test(tc, test_runtime_finish_errors);
	tcase_add_test(tc, test_runtime_limit);
	suite_add_tcase(s, tc);
	return tap_run(s);
}
