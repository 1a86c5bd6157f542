/* dlh_msg.h — the one way dlhook talks on stderr, shared by libdlhook.so and the dlhook command:
 * one line "dlhook: <prefix><message>\n" written with a single write(2) (no stdio buffer, safe
 * to interleave with the program's own output, tolerable in a signal handler). */
#ifndef DLH_MSG_H
#define DLH_MSG_H

#include <stdarg.h>

/* 1: dlh_info prints nothing (DLHOOK_QUIET); warnings still print. */
extern int dlh_msg_quiet;

/* From now on messages go to fd 2 only while it is the stream it is now (same dev and inode):
 * libdlhook.so binds it in its constructor, so that a program that closes fd 2 and opens its own
 * file there never finds dlhook's lines in it; with fd 2 closed now, no message is written.
 * Without it (the dlhook command), messages always go to fd 2. */
void dlh_msg_bind_stderr(void);

/* Writes "dlhook: <prefix><fmt...>\n" to fd 2 (truncated to 1 KiB), unless fd 2 is no longer
 * the stream bound by dlh_msg_bind_stderr. */
void dlh_vmsg(const char *prefix, const char *fmt, va_list ap);
/* "dlhook: warning: ...": something did not work and dlhook carries on without it. */
void dlh_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "dlhook: ...": an informational message, silenced by dlh_msg_quiet. */
void dlh_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The signature of dlh_warn, for services that take a warning function. */
typedef void (*dlh_warn_fn)(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
