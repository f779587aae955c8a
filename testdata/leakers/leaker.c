// leaker: an MCP server over stdio (newline-delimited JSON-RPC, written by
// hand: C has no SDK here) with one tool, put, that keeps LEAK_BYTES bytes
// per call under a key it refuses to repeat and churns CHURN_BYTES of
// garbage per call through glibc malloc. See README.md.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct entry {
	struct entry *next;
	char *key;
	char *data;
};

static long env_long(const char *name, long def) {
	const char *v = getenv(name);
	if (!v || !*v) return def;
	char *end;
	long n = strtol(v, &end, 10);
	if (*end || n < 0) {
		fprintf(stderr, "leaker: %s=%s: want a number of bytes\n", name, v);
		exit(2);
	}
	return n;
}

// copy_field copies the JSON value after "name": (a string without escapes,
// or a bare token) into out; returns 0 if absent.
static int copy_field(const char *line, const char *name, char *out, size_t cap, int *quoted) {
	char pat[64];
	snprintf(pat, sizeof pat, "\"%s\":", name);
	const char *p = strstr(line, pat);
	if (!p) return 0;
	p += strlen(pat);
	while (*p == ' ') p++;
	size_t n = 0;
	*quoted = *p == '"';
	if (*quoted) {
		p++;
		while (*p && *p != '"' && n + 1 < cap) out[n++] = *p++;
	} else {
		while (*p && *p != ',' && *p != '}' && *p != ' ' && n + 1 < cap) out[n++] = *p++;
	}
	out[n] = 0;
	return 1;
}

int main(void) {
	long leak = env_long("LEAK_BYTES", 0), churn = env_long("CHURN_BYTES", 256 << 10);
	long exit_after = env_long("LEAK_EXIT_AFTER", 0), calls = 0;
	struct entry *kept = NULL;
	char *line = NULL;
	size_t cap = 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (getline(&line, &cap, stdin) > 0) {
		char method[128], id[64], key[256], version[64];
		int q, idq;
		if (!copy_field(line, "method", method, sizeof method, &q)) continue;
		if (!copy_field(line, "id", id, sizeof id, &idq)) continue; // a notification
		char idtext[80];
		snprintf(idtext, sizeof idtext, idq ? "\"%s\"" : "%s", id);
		if (!strcmp(method, "initialize")) {
			if (!copy_field(line, "protocolVersion", version, sizeof version, &q)) strcpy(version, "2025-06-18");
			printf("{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"protocolVersion\":\"%s\",\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":\"cleaker\",\"version\":\"v1\"}}}\n", idtext, version);
		} else if (!strcmp(method, "tools/list")) {
			printf("{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"tools\":[{\"name\":\"put\",\"description\":\"Keep LEAK_BYTES under a new key.\",\"inputSchema\":{\"type\":\"object\",\"properties\":{\"key\":{\"type\":\"string\"}}}}]}}\n", idtext);
		} else if (!strcmp(method, "tools/call")) {
			if (exit_after > 0 && ++calls > exit_after) {
				fprintf(stderr, "cleaker: exiting after %ld calls (LEAK_EXIT_AFTER)\n", exit_after);
				exit(3);
			}
			if (!copy_field(line, "key", key, sizeof key, &q)) key[0] = 0;
			int dup = 0;
			if (leak > 0) {
				for (struct entry *e = kept; e && !dup; e = e->next) dup = !strcmp(e->key, key);
				if (!dup) {
					struct entry *e = malloc(sizeof *e);
					e->key = strdup(key);
					e->data = malloc(leak);
					memset(e->data, 1, leak);
					e->next = kept;
					kept = e;
				}
			}
			// Garbage in small pieces, as a server builds a reply.
			char *pieces[64];
			long n = 0, piece = churn / 64 > 0 ? churn / 64 : 1;
			for (long done = 0; done < churn && n < 64; done += piece) {
				pieces[n] = malloc(piece);
				memset(pieces[n], 2, piece);
				n++;
			}
			for (long i = 0; i < n; i++) free(pieces[i]);
			if (dup)
				printf("{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"key %s exists already\"}],\"isError\":true}}\n", idtext, key);
			else
				printf("{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"kept %s\"}]}}\n", idtext, key);
		} else if (!strcmp(method, "ping")) {
			printf("{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{}}\n", idtext);
		} else {
			printf("{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":-32601,\"message\":\"no method %s\"}}\n", idtext, method);
		}
	}
	return 0;
}
