/* tool-deny: a Snodo interceptor (ABI version 2, abi/ABI.md section 8) in C
 * that denies each tools/call of a tool on its deny list:
 *
 *   {"deny": ["delete_file", "move_file"]}
 *
 * Names are compared exactly (MCP tool names are case-sensitive) after the
 * JSON escapes of both are decoded, so "delete\u005ffile" is delete_file.
 * The name is read from the top level of the request's params only: a
 * "name" inside "arguments" is not the tool's. A call without a string
 * "name" is denied too. A configuration that is not {"deny": [strings]}
 * denies every call, with an error saying what is wrong. */
#include "../snodo.h"

#include <stdio.h>

typedef struct { char *buf; size_t len, cap; } str;

static int put(str *s, const char *p, size_t n) {
	if (s->len + n + 1 > s->cap) {
		size_t cap = (s->len + n + 1) * 2;
		char *b = realloc(s->buf, cap);
		if (!b) return 0;
		s->buf = b;
		s->cap = cap;
	}
	memcpy(s->buf + s->len, p, n);
	s->len += n;
	s->buf[s->len] = 0;
	return 1;
}

static const char *ws(const char *p, const char *end) {
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
	return p;
}

static int hex4(const char *p, const char *end, unsigned *v) {
	if (end - p < 4) return 0;
	*v = 0;
	for (int i = 0; i < 4; i++) {
		char c = p[i];
		unsigned d;
		if (c >= '0' && c <= '9') d = c - '0';
		else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
		else return 0;
		*v = *v << 4 | d;
	}
	return 1;
}

static int put_utf8(str *s, unsigned r) {
	char b[4];
	size_t n;
	if (r < 0x80) { b[0] = r; n = 1; }
	else if (r < 0x800) { b[0] = 0xC0 | r >> 6; b[1] = 0x80 | (r & 0x3F); n = 2; }
	else if (r < 0x10000) { b[0] = 0xE0 | r >> 12; b[1] = 0x80 | (r >> 6 & 0x3F); b[2] = 0x80 | (r & 0x3F); n = 3; }
	else { b[0] = 0xF0 | r >> 18; b[1] = 0x80 | (r >> 12 & 0x3F); b[2] = 0x80 | (r >> 6 & 0x3F); b[3] = 0x80 | (r & 0x3F); n = 4; }
	return put(s, b, n);
}

/* string decodes the JSON string at p (its opening quote) into out (when
 * out is not 0) and returns the position after its closing quote, or 0.
 * A lone surrogate escape decodes to U+FFFD, as Go's encoding/json does. */
static const char *string(const char *p, const char *end, str *out) {
	if (out) { out->len = 0; if (!put(out, "", 0)) return 0; }
	if (p >= end || *p != '"') return 0;
	p++;
	while (p < end) {
		unsigned char c = *p++;
		if (c == '"') return p;
		if (c < 0x20) return 0;
		if (c != '\\') { if (out && !put(out, (char *)&c, 1)) return 0; continue; }
		if (p >= end) return 0;
		char e = *p++, ch = 0;
		switch (e) {
		case '"': case '\\': case '/': ch = e; break;
		case 'b': ch = '\b'; break;
		case 'f': ch = '\f'; break;
		case 'n': ch = '\n'; break;
		case 'r': ch = '\r'; break;
		case 't': ch = '\t'; break;
		case 'u': {
			unsigned r, r2;
			if (!hex4(p, end, &r)) return 0;
			p += 4;
			if (r >= 0xD800 && r < 0xDC00 && end - p >= 6 && p[0] == '\\' && p[1] == 'u' &&
			    hex4(p + 2, end, &r2) && r2 >= 0xDC00 && r2 < 0xE000) {
				r = 0x10000 + ((r - 0xD800) << 10) + (r2 - 0xDC00);
				p += 6;
			} else if (r >= 0xD800 && r < 0xE000) {
				r = 0xFFFD;
			}
			if (out && !put_utf8(out, r)) return 0;
			continue;
		}
		default: return 0;
		}
		if (out && !put(out, &ch, 1)) return 0;
	}
	return 0;
}

/* skip returns the position after the JSON value at p, or 0. */
static const char *skip(const char *p, const char *end, int depth) {
	p = ws(p, end);
	if (p >= end || depth > 512) return 0;
	if (*p == '"') return string(p, end, 0);
	if (*p == '{' || *p == '[') {
		char close = *p == '{' ? '}' : ']';
		p = ws(p + 1, end);
		if (p < end && *p == close) return p + 1;
		for (;;) {
			if (close == '}') {
				if (!(p = string(ws(p, end), end, 0))) return 0;
				p = ws(p, end);
				if (p >= end || *p++ != ':') return 0;
			}
			if (!(p = skip(p, end, depth + 1))) return 0;
			p = ws(p, end);
			if (p >= end) return 0;
			if (*p == close) return p + 1;
			if (*p++ != ',') return 0;
		}
	}
	while (p < end && (*p == '-' || *p == '+' || *p == '.' || (*p >= '0' && *p <= '9') ||
	                   (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z'))) p++;
	return p;
}

/* member returns the value (its first byte) of the member key of the JSON
 * object at p, at its top level, or 0 when there is none. */
static const char *member(const char *p, const char *end, const char *key, str *tmp) {
	p = ws(p, end);
	if (p >= end || *p != '{') return 0;
	p = ws(p + 1, end);
	if (p < end && *p == '}') return 0;
	for (;;) {
		if (!(p = string(ws(p, end), end, tmp))) return 0;
		p = ws(p, end);
		if (p >= end || *p++ != ':') return 0;
		p = ws(p, end);
		if (strlen(key) == tmp->len && memcmp(tmp->buf, key, tmp->len) == 0) return p;
		if (!(p = skip(p, end, 0))) return 0;
		p = ws(p, end);
		if (p >= end || *p++ != ',') return 0;
	}
}

static str *deny;          /* the decoded names */
static size_t ndeny;
static const char *config_error; /* set when the configuration is bad */

SNODO_EXPORT("snodo_describe") int32_t describe(void) {
	snodo_output_str("{\"abi\":2,\"name\":\"tool-deny\","
	                 "\"intercept\":{\"requests\":true,\"methods\":[\"tools/call\"]}}");
	return SNODO_OK;
}

static void load_config(void) {
	char *cfg = snodo_read_config();
	if (!cfg) { config_error = "out of memory"; return; }
	const char *end = cfg + strlen(cfg);
	str tmp = {0};
	const char *p = member(cfg, end, "deny", &tmp);
	if (!p || *p != '[') {
		config_error = "configuration must be {\"deny\": [\"tool name\", ...]}";
		return;
	}
	p = ws(p + 1, end);
	if (p < end && *p == ']') return;
	for (;;) {
		str name = {0};
		p = string(ws(p, end), end, &name);
		if (!p || name.len == 0) {
			config_error = "configuration: \"deny\" must be an array of non-empty strings";
			return;
		}
		str *d = realloc(deny, (ndeny + 1) * sizeof *deny);
		if (!d) { config_error = "out of memory"; return; }
		deny = d;
		deny[ndeny++] = name;
		p = ws(p, end);
		if (p < end && *p == ']') break;
		if (p >= end || *p++ != ',') {
			config_error = "configuration: \"deny\" must be an array of non-empty strings";
			return;
		}
	}
	free(tmp.buf);
	free(cfg);
}

/* refuse answers ERROR with an error object saying why. */
static int32_t refuse(int code, const char *why, const str *name) {
	str out = {0}, msg = {0};
	put(&msg, why, strlen(why));
	if (name) {
		put(&msg, ": ", 2);
		put(&msg, name->buf, name->len);
	}
	char head[48];
	int n = snprintf(head, sizeof head, "{\"code\":%d,\"message\":\"", code);
	put(&out, head, n);
	for (size_t i = 0; i < msg.len; i++) {
		unsigned char c = msg.buf[i];
		char e[8];
		if (c == '"' || c == '\\') { e[0] = '\\'; e[1] = c; put(&out, e, 2); }
		else if (c < 0x20) { snprintf(e, sizeof e, "\\u%04x", c); put(&out, e, 6); }
		else put(&out, (char *)&c, 1);
	}
	put(&out, "\"}", 2);
	if (out.buf) snodo_set_output(out.buf, out.len);
	free(out.buf);
	free(msg.buf);
	return SNODO_ERROR;
}

static int loaded;

SNODO_EXPORT("snodo_intercept_request") int32_t intercept_request(const char *in, uint32_t len) {
	if (!loaded) { load_config(); loaded = 1; }
	if (config_error) return refuse(-32603, "tool-deny", &(str){(char *)config_error, strlen(config_error), 0});
	const char *end = in + len;
	static str tmp, name;
	const char *params = member(in, end, "params", &tmp);
	if (!params) return refuse(-32602, "tool-deny: a request without params", 0);
	const char *v = member(params, end, "name", &tmp);
	if (!v || !string(v, end, &name)) return refuse(-32602, "tool-deny: tools/call without a tool name", 0);
	for (size_t i = 0; i < ndeny; i++) {
		if (deny[i].len == name.len && memcmp(deny[i].buf, name.buf, name.len) == 0)
			return refuse(-32602, "tool-deny: this tool is on this client's deny list", &name);
	}
	return SNODO_OK;
}
