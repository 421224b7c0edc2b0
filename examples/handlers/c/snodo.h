/* snodo.h: the Snodo handler ABI, versions 1 and 2 (abi/ABI.md), for C modules
 * built with clang and wasi-libc as WASI reactors:
 *
 *   clang --target=wasm32-wasi --sysroot=/usr -mexec-model=reactor -O2 \
 *         -o handler.wasm handler.c
 *
 * A module defines snodo_describe and snodo_handle (or snodo_progress,
 * snodo_event) with SNODO_EXPORT; snodo_alloc below hands out memory from
 * malloc. */
#ifndef SNODO_H
#define SNODO_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SNODO_EXPORT(name) __attribute__((export_name(name)))
#define SNODO_IMPORT(name) __attribute__((import_module("snodo"), import_name(name)))

/* SNODO_REPLACE is for interceptors (ABI version 2, abi/ABI.md section 8):
 * an interceptor exports SNODO_EXPORT("snodo_intercept_request") and/or
 * SNODO_EXPORT("snodo_intercept_result") int32_t f(const char *in, uint32_t len),
 * declares {"abi":2,"intercept":{"requests":true,"results":true}} in its
 * manifest, and returns SNODO_OK (let it through), SNODO_ERROR (deny, with an
 * optional error object) or SNODO_REPLACE (the output replaces the params, or
 * is {"result":{...}} or {"error":{...}}). */
enum { SNODO_OK = 0, SNODO_ERROR = 1, SNODO_STOP = 2, SNODO_REPLACE = 3 };
enum { SNODO_DEBUG = 0, SNODO_INFO = 1, SNODO_WARN = 2, SNODO_ERR = 3 };

SNODO_IMPORT("set_output") void snodo_set_output(const void *ptr, uint32_t len);
SNODO_IMPORT("log") void snodo_log(int32_t level, const void *ptr, uint32_t len);
SNODO_IMPORT("config") uint32_t snodo_config(void *ptr, uint32_t cap);

/* The input buffer of the call in progress: the host fills it after
 * snodo_alloc and the next snodo_alloc frees it. */
static void *snodo_input;

SNODO_EXPORT("snodo_alloc") void *snodo_alloc(uint32_t size) {
	free(snodo_input);
	snodo_input = malloc(size ? size : 1);
	return snodo_input;
}

static inline void snodo_output_str(const char *s) { snodo_set_output(s, strlen(s)); }
static inline void snodo_log_str(int32_t level, const char *s) { snodo_log(level, s, strlen(s)); }

/* snodo_read_config returns the module's configuration as a NUL-terminated
 * string allocated with malloc ("null" when none). */
static inline char *snodo_read_config(void) {
	uint32_t n = snodo_config(0, 0);
	char *buf = malloc(n + 1);
	if (!buf) return 0;
	snodo_config(buf, n);
	buf[n] = 0;
	return buf;
}

#endif
