/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What /proc says of this process, for the selftests that wait for a
 * thread to block (raw-ioctl suites and libsnpu suites alike: no snpu
 * header needed).
 */
#ifndef _SNPU_PROC_H
#define _SNPU_PROC_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

/* Return: the state letter of the stat file @path, or 0. */
static inline char snpu_stat_state(const char *path)
{
	char buf[512], *p;
	ssize_t n;
	FILE *f;

	f = fopen(path, "re");
	if (!f)
		return 0;
	n = (ssize_t)fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

/* Return: the state letter of thread @tid of this process, or 0. */
static inline char snpu_thread_state(pid_t tid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	return snpu_stat_state(path);
}

/* Return: the state letter of process @pid, or 0 once it is gone. */
static inline char snpu_proc_state(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	return snpu_stat_state(path);
}

/*
 * The value of a "Name:  N kB" line of the proc file @path (such as
 * /proc/self/status or /proc/meminfo), in kB. Return: it, or -1.
 */
static inline long long snpu_proc_kb(const char *path, const char *name)
{
	char line[256];
	long long v = -1;
	size_t len = strlen(name);
	FILE *f = fopen(path, "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, name, len) && line[len] == ':') {
			v = strtoll(line + len + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

#endif /* _SNPU_PROC_H */
