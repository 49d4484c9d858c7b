/*
 * termesc: text that came from somewhere else (a daemon's answer, a
 * caller's command name, a path) made safe to print on a terminal.  A
 * control character (C0, DEL, C1 in UTF-8) or a byte that is not part of
 * valid UTF-8 is written as \xHH, so that ESC ]0; cannot set a terminal's
 * title, nor a C1 CSI move its cursor, whatever the source sent.  Valid
 * UTF-8 text passes unchanged, and so do backslashes (JSON keeps its own
 * escapes).  Private, never installed; no state, no lock.
 */
#ifndef INTRFS_TERMESC_H
#define INTRFS_TERMESC_H

#include <stddef.h>
#include <stdio.h>

/* Newlines and tabs pass (a multi-line answer); else they are escaped. */
#define TERMESC_LINES 1

/*
 * s (n bytes) escaped into out (len bytes, always terminated; what does
 * not fit is cut at a whole character or escape).  Returns the length.
 */
size_t termesc(char *out, size_t len, const char *s, size_t n, int flags);

/* s (n bytes) written escaped to f: 0, or EOF when f failed. */
int termesc_fwrite(FILE *f, const char *s, size_t n, int flags);

#endif
