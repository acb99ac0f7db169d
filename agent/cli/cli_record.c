/* cli_record: berth record start, stop and status, over the record.*
 * ops. record stop -o fetches the MP4 it ends with cli_xfer's ranged
 * read of artifact.read and lands it whole, its SHA-256 checked. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_desktop.h"
#include "cli_print.h"
#include "cli_record.h"
#include "cli_xfer.h"
#include "log.h"
#include "sha256.h"
#include "xmalloc.h"

/* record.start's limits. */
#define CLI_RECORD_FPS_MAX 30
#define CLI_RECORD_SECONDS_MAX 86400
/* A recording's id is berth-desktop's to choose (8 hex digits today);
 * the word is only kept short and printable. */
#define CLI_RECORD_ID_MAX 64
/* record stop waits at least this long for its answer: the file is
 * finished, made a plain MP4 and copied into the artifact store first. */
#define CLI_RECORD_STOP_WAIT_MS 120000
/* An artifact's id: the SHA-256 of its bytes in hex. */
#define CLI_RECORD_HEX_ID 64

/* Option values, apart from every global option's. */
enum {
	CLI_RECORD_OPT_FPS = 256,
	CLI_RECORD_OPT_REGION,
	CLI_RECORD_OPT_MAX_SECONDS,
	CLI_RECORD_OPT_QUALITY,
};

/* record start's arguments; 0 (or region unset): the op's default. */
struct cli_record_args {
	long fps;
	struct cli_desktop_rect region;
	long max_seconds;
	long quality;
};

/*
 * record stop: record.stop's answer, then, with an output, the MP4 it
 * names read by artifact.read (cli_xfer's ranged read, of a fixed size)
 * into a hidden temp file beside output, hashed as it is written. A lost
 * connection is made again: record.stop is asked again if its answer had
 * not come (a recording that has ended answers at once), and the read
 * goes on from the byte it reached. result is record.stop's answer packed
 * again, as it outlives its connection. On rec_stop's stack; owns result,
 * the read's connection and the landing.
 */
struct cli_record_fetch {
	struct cli *cli;
	const char *rec_id; /* argv */
	const char *output; /* argv; NULL: no fetch */
	msgpack_sbuffer result;
	char art_id[CLI_RECORD_HEX_ID + 1];
	char sha256[CLI_RECORD_HEX_ID + 1];
	struct cli_xfer_read read;
	struct cli_xfer_land land;
	struct sha256 sha;
};

static void
cli_record_pack_start_cb(msgpack_packer *pk, void *ctx)
{
	struct cli_record_args *a = ctx;

	msgpack_pack_map(pk,
	    (a->fps != 0) + a->region.set + (a->max_seconds != 0) +
	        (a->quality != 0));
	if (a->fps != 0)
		proto_pack_kv_i64(pk, "fps", a->fps);
	if (a->region.set)
		cli_desktop_pack_rect(pk, "region", &a->region);
	if (a->max_seconds != 0)
		proto_pack_kv_i64(pk, "max_seconds", a->max_seconds);
	if (a->quality != 0)
		proto_pack_kv_i64(pk, "quality", a->quality);
}

static void
cli_record_pack_id_cb(msgpack_packer *pk, void *ctx)
{
	const char *id = ctx;

	msgpack_pack_map(pk, id != NULL);
	if (id != NULL)
		proto_pack_kv_str(pk, "id", id);
}

/* The ID word of stop and status: what berth-desktop named a recording,
 * so a short printable word; whether it names one is its to say. */
static int
cli_record_id(struct cli *cli, const char *word)
{
	size_t i, len = strlen(word);

	for (i = 0; i < len; i++)
		if ((unsigned char)word[i] <= 0x20 || word[i] == 0x7f)
			break;
	if (len == 0 || len > CLI_RECORD_ID_MAX || i < len)
		return cli_usage(cli,
		    "ID is what record start printed, like 1a2b3c4d: '%.64s'",
		    word);
	return CLI_EXIT_OK;
}

static int
cli_record_start_show(struct cli *cli, const msgpack_object *result, void *ctx)
{
	const msgpack_object *id = proto_map_get(result, "id");
	char *shown;

	(void)ctx;
	if (id == NULL || id->type != MSGPACK_OBJECT_STR)
		return cli_fail(CLI_CONN_PROTOCOL,
		    xstrdup("record.start answered without an id"));
	if (cli->json) {
		cli_print_json(result);
		return CLI_EXIT_OK;
	}
	shown = cli_desktop_text(result, "id", "?");
	printf("%s\n", shown);
	free(shown);
	return CLI_EXIT_OK;
}

static int
cli_record_start(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"fps", required_argument, NULL, CLI_RECORD_OPT_FPS},
	    {"region", required_argument, NULL, CLI_RECORD_OPT_REGION},
	    {"max-seconds", required_argument, NULL,
	        CLI_RECORD_OPT_MAX_SECONDS},
	    {"quality", required_argument, NULL, CLI_RECORD_OPT_QUALITY},
	    {NULL, 0, NULL, 0},
	};
	struct cli_record_args a = {0};
	int c, status;

	while ((c = cli_next_opt(cli, argc, argv, opts, "")) != -1) {
		switch (c) {
		case CLI_STOP: return CLI_EXIT_USAGE;
		case CLI_RECORD_OPT_FPS:
			if (cli_desktop_long(
			        optarg, 1, CLI_RECORD_FPS_MAX, &a.fps) != 0)
				return cli_usage(cli,
				    "--fps wants frames per second, an "
				    "integer from 1 to %d: %s",
				    CLI_RECORD_FPS_MAX, optarg);
			break;
		case CLI_RECORD_OPT_REGION:
			if ((status = cli_desktop_region(
			         cli, optarg, &a.region)) != 0)
				return status;
			break;
		case CLI_RECORD_OPT_MAX_SECONDS:
			if (cli_desktop_long(optarg, 1, CLI_RECORD_SECONDS_MAX,
			        &a.max_seconds) != 0)
				return cli_usage(cli,
				    "--max-seconds wants an integer from 1 "
				    "to %d: %s",
				    CLI_RECORD_SECONDS_MAX, optarg);
			break;
		case CLI_RECORD_OPT_QUALITY:
			if ((status = cli_desktop_quality(
			         cli, optarg, &a.quality)) != 0)
				return status;
			break;
		}
	}
	if ((status = cli_ready(cli)) != 0)
		return status;
	return cli_desktop_request(cli, "record.start",
	    cli_record_pack_start_cb, &a, 0, cli_record_start_show);
}

/* Whether s is 64 lowercase hex digits, as an artifact's id is. */
static bool
cli_record_is_hex_id(const char *s)
{
	return strlen(s) == CLI_RECORD_HEX_ID &&
	    strspn(s, "0123456789abcdef") == CLI_RECORD_HEX_ID;
}

/* record.stop, waiting as long as the file may take to be finished and
 * published; keeps the answer and the reference it holds. */
static int
cli_record_stop_call(struct cli_record_fetch *f, char **cause)
{
	const struct proto_msg *resp;
	const msgpack_object *art;
	msgpack_packer pk;
	int wait = f->cli->timeout_ms > CLI_RECORD_STOP_WAIT_MS
	    ? f->cli->timeout_ms
	    : CLI_RECORD_STOP_WAIT_MS;
	int status;

	status = cli_conn_call(f->read.link.conn, "record.stop",
	    cli_record_pack_id_cb, (void *)f->rec_id, wait, &resp, cause);
	if (status != CLI_CONN_OK)
		return status;
	art = proto_map_get(resp->result, "artifact");
	if (art == NULL ||
	    proto_arg_str(art, "id", f->art_id, sizeof f->art_id) != 1 ||
	    proto_arg_str(art, "sha256", f->sha256, sizeof f->sha256) != 1 ||
	    proto_arg_u64(art, "size", &f->read.size) != 1 ||
	    !cli_record_is_hex_id(f->art_id) ||
	    !cli_record_is_hex_id(f->sha256)) {
		*cause = xstrdup("record.stop answered without the artifact's "
		                 "id, sha256 and size");
		return CLI_CONN_PROTOCOL;
	}
	msgpack_packer_init(&pk, &f->result, msgpack_sbuffer_write);
	msgpack_pack_object(&pk, *resp->result);
	return CLI_CONN_OK;
}

static int
cli_record_stop_call_cb(void *arg, char **cause)
{
	return cli_record_stop_call(arg, cause);
}

/* record.stop, asked again on a new connection while its answer has not
 * come, then the MP4's bytes, read on to the end as cp reads a file. */
static int
cli_record_stop_run(struct cli_record_fetch *f, char **cause)
{
	struct cli_xfer_link *l = &f->read.link;
	int status;

	if ((status = cli_xfer_open(l, cause)) != CLI_CONN_OK)
		return status;
	status = cli_record_stop_call(f, cause);
	if (status == CLI_CONN_LOST)
		status = cli_xfer_reconnect(
		    l, *cause, cli_record_stop_call_cb, f, cause);
	if (status != CLI_CONN_OK || f->output == NULL)
		return status;
	return cli_xfer_read_run(&f->read, cause);
}

/* The fetched MP4, whole and as published (its size and SHA-256 are the
 * reference's), landed on output. */
static int
cli_record_fetch_land(struct cli_record_fetch *f, char **cause)
{
	uint8_t digest[SHA256_LEN];
	char hex[SHA256_HEX];

	sha256_final(&f->sha, digest);
	sha256_hex(digest, hex);
	if (strcmp(hex, f->sha256) != 0) {
		*cause = xasprintf("%s not written: its bytes' SHA-256 is %s, "
		                   "the artifact's %s",
		    f->output, hex, f->sha256);
		return CLI_CONN_ANSWERED;
	}
	if (cli_xfer_land_commit(&f->land, 0666, cause) != 0)
		return CLI_CONN_ANSWERED;
	return CLI_CONN_OK;
}

/* The reference, the video's counts and the file, as lines (the labels
 * of desktop info's). */
static void
cli_record_stop_lines(const msgpack_object *result, const char *file)
{
	const msgpack_object *art = proto_map_get(result, "artifact");
	char *id = cli_desktop_text(art, "id", "?");
	char *name = cli_desktop_text(art, "name", "?");
	char *type = cli_desktop_text(art, "media_type", "?");
	int64_t size = 0, ms = 0, frames = 0, dropped = 0;

	cli_desktop_int(art, "size", &size);
	cli_desktop_int(result, "duration_ms", &ms);
	cli_desktop_int(result, "frames", &frames);
	cli_desktop_int(result, "dropped", &dropped);
	printf("artifact %s\n", id);
	printf("name     %s, %s, %" PRId64 " bytes\n", name, type, size);
	printf("video    %.1f s, %" PRId64 " frames, %" PRId64 " dropped\n",
	    (double)ms / 1000, frames, dropped);
	if (file != NULL)
		printf("file     %s, SHA-256 checked\n", file);
	free(id);
	free(name);
	free(type);
}

static void
cli_record_stop_show(struct cli_record_fetch *f)
{
	msgpack_unpacked u;

	msgpack_unpacked_init(&u);
	if (msgpack_unpack_next(&u, f->result.data, f->result.size, NULL) !=
	    MSGPACK_UNPACK_SUCCESS)
		log_fatal("record.stop's answer does not unpack again");
	if (!f->cli->json)
		cli_record_stop_lines(&u.data, f->output);
	else if (f->output != NULL)
		cli_desktop_file_json(&u.data, NULL, f->output);
	else
		cli_print_json(&u.data);
	msgpack_unpacked_destroy(&u);
}

static int
cli_record_stop_args(
    struct cli *cli, int argc, char **argv, struct cli_record_fetch *f)
{
	static const struct option opts[] = {
	    {"output", required_argument, NULL, 'o'},
	    {NULL, 0, NULL, 0},
	};
	char *word;
	int c;

	while ((c = cli_next(cli, argc, argv, opts, "o:", &word)) != -1) {
		if (c == CLI_STOP)
			return CLI_EXIT_USAGE;
		if (c == 'o') {
			if (*optarg == '\0' || strcmp(optarg, "-") == 0)
				return cli_usage(cli,
				    "-o wants a FILE for the MP4: '%s'",
				    optarg);
			f->output = optarg;
		} else if (f->rec_id != NULL)
			return cli_usage(
			    cli, "record stop takes one ID: %s", word);
		else
			f->rec_id = word;
	}
	if (f->rec_id == NULL)
		return cli_usage(
		    cli, "record stop wants the ID record start printed");
	return cli_record_id(cli, f->rec_id);
}

static int
cli_record_stop(struct cli *cli, int argc, char **argv)
{
	struct cli_record_fetch f = {.cli = cli,
	    .read = {.op = "artifact.read", .key = "id", .fixed = true},
	    .land = {.fd = -1}};
	char *cause = NULL;
	int status;

	if ((status = cli_record_stop_args(cli, argc, argv, &f)) != 0 ||
	    (status = cli_ready(cli)) != 0)
		return status;
	/* Before the recording ends: a FILE that cannot be written says so
	 * while the recording can still be stopped with another. */
	if (f.output != NULL) {
		cli_xfer_signals();
		if (cli_xfer_land_open(&f.land, f.output,
		        CLI_DESKTOP_TEMP_SUFFIX, &cause) != 0) {
			cli_print_warn("%s", cause);
			free(cause);
			return CLI_EXIT_FAILED;
		}
		sha256_init(&f.sha);
		f.read.fd = f.land.fd;
		f.read.out = f.output;
		f.read.sha = &f.sha;
	}
	cli_xfer_link_init(&f.read.link, cli);
	f.read.name = f.art_id;
	msgpack_sbuffer_init(&f.result);
	status = cli_record_stop_run(&f, &cause);
	cli_xfer_close(&f.read.link);
	if (status == CLI_CONN_OK && f.output != NULL)
		status = cli_record_fetch_land(&f, &cause);
	cli_xfer_land_discard(&f.land);
	if (status == CLI_CONN_OK)
		cli_record_stop_show(&f);
	msgpack_sbuffer_destroy(&f.result);
	if (status != CLI_CONN_OK)
		return cli_xfer_exit(status, cause);
	fflush(stdout);
	return CLI_EXIT_OK;
}

/* The columns of record status. */
#define CLI_RECORD_COLS 10

/* A number of a result's map, or "-". */
static char *
cli_record_num(const msgpack_object *map, const char *key)
{
	int64_t v;

	if (!cli_desktop_int(map, key, &v))
		return xstrdup("-");
	return xasprintf("%" PRId64, v);
}

/* One recording's row: what it became last, the artifact's id once
 * published, why once failed. */
static void
cli_record_status_row(const msgpack_object *rec, char **row)
{
	const msgpack_object *art = proto_map_get(rec, "artifact");
	int64_t started = 0, ms = 0;
	char *state = cli_desktop_text(rec, "state", "?");

	cli_desktop_int(rec, "started", &started);
	cli_desktop_int(rec, "duration_ms", &ms);
	row[0] = cli_desktop_text(rec, "id", "?");
	row[1] = state;
	row[2] = cli_print_utc(started > 0 ? (uint64_t)started : 0);
	row[3] = cli_record_num(rec, "fps");
	row[4] = cli_desktop_geometry(proto_map_get(rec, "region"));
	row[5] = xasprintf("%.1f s", (double)ms / 1000);
	row[6] = cli_record_num(rec, "frames");
	row[7] = cli_record_num(rec, "dropped");
	row[8] = cli_record_num(rec, "bytes");
	if (art != NULL && art->type == MSGPACK_OBJECT_MAP)
		row[9] = cli_desktop_text(art, "id", "?");
	else if (strcmp(state, "failed") == 0)
		row[9] = cli_desktop_text(rec, "reason", "?");
	else
		row[9] = xstrdup("-");
}

static int
cli_record_status_show(struct cli *cli, const msgpack_object *result, void *ctx)
{
	static const char *const head[CLI_RECORD_COLS] = {"ID", "STATE",
	    "STARTED", "FPS", "REGION", "DURATION", "FRAMES", "DROPPED",
	    "BYTES", "ARTIFACT/REASON"};
	const msgpack_object *list = proto_map_get(result, "recordings");
	char **cells;
	uint32_t i, n;

	(void)ctx;
	if (list == NULL || list->type != MSGPACK_OBJECT_ARRAY)
		return cli_fail(CLI_CONN_PROTOCOL,
		    xstrdup("record.status answered without recordings"));
	if (cli->json) {
		cli_print_json(result);
		return CLI_EXIT_OK;
	}
	if ((n = list->via.array.size) == 0) {
		printf("no recordings\n");
		return CLI_EXIT_OK;
	}
	cells = cli_print_cells(head, CLI_RECORD_COLS, n);
	for (i = 0; i < n; i++)
		cli_record_status_row(
		    &list->via.array.ptr[i], &cells[(i + 1) * CLI_RECORD_COLS]);
	cli_print_table(CLI_RECORD_COLS, n + 1, cells);
	return CLI_EXIT_OK;
}

static int
cli_record_status(struct cli *cli, int argc, char **argv)
{
	char *word, *id = NULL;
	int c, status;

	while ((c = cli_next(cli, argc, argv, NULL, "", &word)) != -1) {
		if (c == CLI_STOP)
			return CLI_EXIT_USAGE;
		if (id != NULL)
			return cli_usage(cli,
			    "record status takes one ID at most: %s", word);
		if ((status = cli_record_id(cli, word)) != 0)
			return status;
		id = word;
	}
	if ((status = cli_ready(cli)) != 0)
		return status;
	return cli_desktop_request(cli, "record.status", cli_record_pack_id_cb,
	    id, 0, cli_record_status_show);
}

static const struct cli_cmd_entry cli_record_start_entry = {
    .name = "start",
    .usage = "[--fps N] [--region X,Y,W,H] [--max-seconds S] [--quality Q]",
    .exec = cli_record_start,
};

static const struct cli_cmd_entry cli_record_stop_entry = {
    .name = "stop",
    .usage = "ID [-o FILE]",
    .exec = cli_record_stop,
};

static const struct cli_cmd_entry cli_record_status_entry = {
    .name = "status",
    .usage = "[ID]",
    .exec = cli_record_status,
};

static const struct cli_cmd_entry *const cli_record_subs[] = {
    &cli_record_start_entry,
    &cli_record_stop_entry,
    &cli_record_status_entry,
    NULL,
};

static int
cli_record_run(struct cli *cli, int argc, char **argv)
{
	return cli_sub_run(
	    cli, argc, argv, cli_record_subs, "start, stop or status");
}

const struct cli_cmd_entry cli_record_entry = {
    .name = "record",
    .usage = "start|stop|status ...",
    .summary = "record the screen to MP4: start [--fps N]\n"
               "[--region X,Y,W,H] [--max-seconds S]\n"
               "[--quality Q] prints its ID; stop ID [-o FILE]\n"
               "ends it and prints the artifact (-o: saves the\n"
               "MP4 here); status [ID] lists the recordings",
    .exec = cli_record_run,
};
