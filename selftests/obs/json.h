/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A small JSON parser for the obs selftests: every scalar of a document
 * by its path, and a runner of snpu-smi that parses its output.
 */
#ifndef _OBS_JSON_H
#define _OBS_JSON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define SMI		"/opt/snpu/bin/snpu-smi"

#define JMAX	2048

/* "devices[0].index" = "0", "contexts[2].state" = "RUNNING", ... */
struct jdoc {
	struct { char path[128]; char val[64]; } e[JMAX];
	unsigned int n;
};

static inline void jws(const char **p)
{
	while (**p == ' ' || **p == '\n' || **p == '\t' || **p == '\r')
		(*p)++;
}

/* Parse one value at *p under @path. Return: 0 or -1 when not JSON. */
static inline int jvalue(const char **p, const char *path, struct jdoc *d);

static inline int jstring(const char **p, char *out, size_t len)
{
	size_t n = 0;

	if (**p != '"')
		return -1;
	for ((*p)++; **p && **p != '"'; (*p)++) {
		if (**p == '\\' || (unsigned char)**p < 0x20)
			return -1;	/* snpu-smi prints no escapes */
		if (n + 1 < len)
			out[n++] = **p;
	}
	if (**p != '"')
		return -1;
	(*p)++;
	out[n] = '\0';
	return 0;
}

static inline int jadd(struct jdoc *d, const char *path, const char *val)
{
	if (d->n == JMAX)
		return -1;
	snprintf(d->e[d->n].path, sizeof(d->e[0].path), "%s", path);
	snprintf(d->e[d->n].val, sizeof(d->e[0].val), "%s", val);
	d->n++;
	return 0;
}

static inline int jvalue(const char **p, const char *path, struct jdoc *d)
{
	char sub[128], key[64], num[64];
	unsigned int i = 0;
	size_t n = 0;

	jws(p);
	if (**p == '{') {
		(*p)++;
		jws(p);
		if (**p == '}') {
			(*p)++;
			return 0;
		}
		for (;;) {
			jws(p);
			if (jstring(p, key, sizeof(key)))
				return -1;
			jws(p);
			if (**p != ':')
				return -1;
			(*p)++;
			snprintf(sub, sizeof(sub), "%s%s%s", path,
				 *path ? "." : "", key);
			if (jvalue(p, sub, d))
				return -1;
			jws(p);
			if (**p == '}') {
				(*p)++;
				return 0;
			}
			if (**p != ',')
				return -1;
			(*p)++;
		}
	}
	if (**p == '[') {
		(*p)++;
		jws(p);
		if (**p == ']') {
			(*p)++;
			return 0;
		}
		for (;; i++) {
			snprintf(sub, sizeof(sub), "%s[%u]", path, i);
			if (jvalue(p, sub, d))
				return -1;
			jws(p);
			if (**p == ']') {
				(*p)++;
				return 0;
			}
			if (**p != ',')
				return -1;
			(*p)++;
		}
	}
	if (**p == '"') {
		if (jstring(p, num, sizeof(num)))
			return -1;
		return jadd(d, path, num);
	}
	if (!strncmp(*p, "true", 4) || !strncmp(*p, "false", 5) ||
	    !strncmp(*p, "null", 4)) {
		n = **p == 'f' ? 5 : 4;
		memcpy(num, *p, n);
		num[n] = '\0';
		*p += n;
		return jadd(d, path, num);
	}
	while (n + 1 < sizeof(num) && (**p == '-' || **p == '+' || **p == '.' ||
				      **p == 'e' || **p == 'E' ||
				      (**p >= '0' && **p <= '9')))
		num[n++] = *(*p)++;
	num[n] = '\0';
	if (!n)
		return -1;
	return jadd(d, path, num);
}

/* Parse all of @text. Return: 0, or -1 when it is not one JSON value. */
static inline int jparse(const char *text, struct jdoc *d)
{
	const char *p = text;

	d->n = 0;
	if (jvalue(&p, "", d))
		return -1;
	jws(&p);
	return *p ? -1 : 0;
}

/* The value at @path, or NULL. */
static inline const char *jget(const struct jdoc *d, const char *path)
{
	unsigned int i;

	for (i = 0; i < d->n; i++)
		if (!strcmp(d->e[i].path, path))
			return d->e[i].val;
	return NULL;
}

/* The number at "@arr[@i].@key", or -1 when absent. */
static inline long long jnum(const struct jdoc *d, const char *arr, unsigned int i,
		      const char *key)
{
	char path[192];
	const char *v;

	snprintf(path, sizeof(path), "%s[%u].%s", arr, i, key);
	v = jget(d, path);
	return v ? strtoll(v, NULL, 10) : -1;
}

/* Run "snpu-smi ARGS" and parse its whole output. Return: its status. */
static inline int smi_json(const char *args, struct jdoc *d, char *out, size_t len)
{
	char cmd[256];
	size_t n = 0, r;
	FILE *f;
	int st;

	snprintf(cmd, sizeof(cmd), SMI " %s", args);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (n + 1 < len && (r = fread(out + n, 1, len - 1 - n, f)) > 0)
		n += r;
	out[n] = '\0';
	st = pclose(f);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		return -1;
	return jparse(out, d);
}

#endif /* _OBS_JSON_H */
