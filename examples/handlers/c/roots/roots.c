/* roots: a Snodo handler in C that answers roots/list from its
 * configuration, a JSON array of absolute directory paths:
 *
 *   ["/home/me/project", "/srv/shared data"]
 *
 * becomes
 *
 *   {"roots":[{"uri":"file:///home/me/project","name":"project"},
 *             {"uri":"file:///srv/shared%20data","name":"shared data"}]}
 *
 * Paths are percent-encoded into file:// URIs and named after their last
 * element. A configuration that is not an array of absolute paths makes
 * every answer a -32603 error saying what is wrong. The answer is built
 * once, in _initialize. */
#include "../snodo.h"

#include <stdio.h>

static char *answer;      /* the result, or the error object */
static int answer_status; /* SNODO_OK or SNODO_ERROR */

typedef struct { char *buf; size_t len, cap; } str;

static void put(str *s, const char *p, size_t n) {
	if (s->len + n + 1 > s->cap) {
		s->cap = (s->len + n + 1) * 2;
		s->buf = realloc(s->buf, s->cap);
	}
	memcpy(s->buf + s->len, p, n);
	s->len += n;
	s->buf[s->len] = 0;
}
static void puts_(str *s, const char *p) { put(s, p, strlen(p)); }

/* put_json_string appends p as a JSON string. */
static void put_json_string(str *s, const char *p, size_t n) {
	puts_(s, "\"");
	for (size_t i = 0; i < n; i++) {
		unsigned char c = p[i];
		char esc[8];
		if (c == '"' || c == '\\') { esc[0] = '\\'; esc[1] = c; put(s, esc, 2); }
		else if (c < 0x20) { snprintf(esc, sizeof esc, "\\u%04x", c); puts_(s, esc); }
		else put(s, (char *)&c, 1);
	}
	puts_(s, "\"");
}

/* put_uri appends the file:// URI of an absolute path, percent-encoding
 * every byte outside RFC 3986's unreserved set and '/'. */
static void put_uri(str *s, const char *p, size_t n) {
	static const char hex[] = "0123456789ABCDEF";
	puts_(s, "\"file://");
	for (size_t i = 0; i < n; i++) {
		unsigned char c = p[i];
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
			put(s, (char *)&c, 1);
		} else {
			char e[3] = {'%', hex[c >> 4], hex[c & 15]};
			put(s, e, 3);
		}
	}
	puts_(s, "\"");
}

static const char *skip_ws(const char *p) {
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
	return p;
}

/* parse_string decodes the JSON string at p (after its opening quote) into
 * out, and returns the position after the closing quote, or 0. Escapes
 * \uXXXX below U+0080 only; others are refused. */
static const char *parse_string(const char *p, str *out) {
	out->len = 0;
	put(out, "", 0);
	for (;;) {
		char c = *p++;
		if (c == 0 || (unsigned char)c < 0x20) return 0;
		if (c == '"') return p;
		if (c != '\\') { put(out, &c, 1); continue; }
		char e = *p++;
		switch (e) {
		case '"': case '\\': case '/': put(out, &e, 1); break;
		case 'n': put(out, "\n", 1); break;
		case 't': put(out, "\t", 1); break;
		case 'u': {
			unsigned v = 0;
			for (int i = 0; i < 4; i++) {
				char h = *p++;
				v <<= 4;
				if (h >= '0' && h <= '9') v |= h - '0';
				else if (h >= 'a' && h <= 'f') v |= h - 'a' + 10;
				else if (h >= 'A' && h <= 'F') v |= h - 'A' + 10;
				else return 0;
			}
			if (v == 0 || v >= 0x80) return 0;
			char b = (char)v;
			put(out, &b, 1);
			break;
		}
		default: return 0;
		}
	}
}

static void fail(const char *why) {
	str s = {0};
	puts_(&s, "{\"code\":-32603,\"message\":");
	size_t n = strlen(why);
	char msg[256];
	snprintf(msg, sizeof msg, "roots: configuration %.*s", (int)(n > 200 ? 200 : n), why);
	put_json_string(&s, msg, strlen(msg));
	puts_(&s, "}");
	answer = s.buf;
	answer_status = SNODO_ERROR;
	snodo_log_str(SNODO_ERR, msg);
}

static void build(const char *cfg) {
	str res = {0}, path = {0};
	const char *p = skip_ws(cfg);
	if (strncmp(p, "null", 4) == 0 && *skip_ws(p + 4) == 0) {
		answer = "{\"roots\":[]}";
		answer_status = SNODO_OK;
		return;
	}
	if (*p++ != '[') return fail("must be a JSON array of absolute paths");
	puts_(&res, "{\"roots\":[");
	p = skip_ws(p);
	int first = 1;
	if (*p == ']') p++;
	else for (;;) {
		if (*p++ != '"') return fail("must be a JSON array of strings");
		p = parse_string(p, &path);
		if (!p) return fail("has a string that is not valid JSON or has a \\u escape above U+007F");
		if (path.len == 0 || path.buf[0] != '/') return fail("has a path that is not absolute");
		while (path.len > 1 && path.buf[path.len - 1] == '/') path.buf[--path.len] = 0;
		const char *name = strrchr(path.buf, '/') + 1;
		if (!first) puts_(&res, ",");
		first = 0;
		puts_(&res, "{\"uri\":");
		put_uri(&res, path.buf, path.len);
		if (*name) {
			puts_(&res, ",\"name\":");
			put_json_string(&res, name, strlen(name));
		}
		puts_(&res, "}");
		p = skip_ws(p);
		if (*p == ',') { p = skip_ws(p + 1); continue; }
		if (*p == ']') { p++; break; }
		return fail("must be a JSON array of strings");
	}
	if (*skip_ws(p) != 0) return fail("has data after the array");
	puts_(&res, "]}");
	answer = res.buf;
	answer_status = SNODO_OK;
}

/* The reactor's constructor runs from _initialize. */
__attribute__((constructor)) static void init(void) {
	char *cfg = snodo_read_config();
	build(cfg ? cfg : "null");
	free(cfg);
}

SNODO_EXPORT("snodo_describe") int32_t snodo_describe(void) {
	snodo_output_str("{\"abi\":1,\"name\":\"roots\",\"methods\":[\"roots/list\"]}");
	return SNODO_OK;
}

SNODO_EXPORT("snodo_handle") int32_t snodo_handle(const char *input, uint32_t len) {
	(void)input;
	(void)len;
	snodo_output_str(answer);
	return answer_status;
}
