/* json: renders a msgpack object as JSON text, for the CLI's --json
 * output and anything else that must speak JSON to people or scripts.
 * bin values become {"$bin": "<base64>"}; non-string map keys are
 * rendered as their JSON text in a string. */
#ifndef BERTH_JSON_H
#define BERTH_JSON_H

#include <msgpack.h>
#include <stdio.h>

/* Writes obj as one line of JSON (no trailing newline) to f. */
void json_write(FILE *f, const msgpack_object *obj);
/* Returns obj as a NUL-terminated JSON string; the caller frees it. */
char *json_string(const msgpack_object *obj);
/* Writes s as a JSON string literal (with quotes), escaping as needed. */
void json_write_str(FILE *f, const char *s, size_t len);

#endif
