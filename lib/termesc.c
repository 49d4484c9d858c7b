/*
 * termesc: what is written as it is and what as \xHH (termesc.h).  One
 * decoder, unit(), says how long the next character is and whether it
 * passes; the two writers share it.
 */
#include "termesc.h"

#include <stdbool.h>
#include <string.h>

/*
 * The next character of s (n > 0 bytes left): its length in bytes, and
 * whether it passes as it is.  A byte that starts no valid UTF-8
 * sequence is a character of one byte that does not pass.
 */
static size_t unit(const unsigned char *s, size_t n, int flags, bool *pass)
{
	unsigned char c = s[0];
	size_t need;
	unsigned lo = 0x80, hi = 0xbf;

	*pass = false;
	if (c < 0x80) {
		*pass = (c >= 0x20 && c != 0x7f) ||
			((flags & TERMESC_LINES) && (c == '\n' || c == '\t'));
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		need = 1;
	} else if (c >= 0xe0 && c <= 0xef) {
		need = 2;
		/* No overlong forms, no UTF-16 surrogates. */
		lo = c == 0xe0 ? 0xa0 : 0x80;
		hi = c == 0xed ? 0x9f : 0xbf;
	} else if (c >= 0xf0 && c <= 0xf4) {
		need = 3;
		lo = c == 0xf0 ? 0x90 : 0x80;
		hi = c == 0xf4 ? 0x8f : 0xbf;
	} else {
		return 1;
	}
	if (n < need + 1 || s[1] < lo || s[1] > hi)
		return 1;
	for (size_t i = 2; i <= need; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 1;
	/* U+0080..U+009F, the C1 controls (CSI is U+009B). */
	*pass = !(c == 0xc2 && s[1] < 0xa0);
	return need + 1;
}

size_t termesc(char *out, size_t len, const char *s, size_t n, int flags)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;
	size_t o = 0;

	if (!len)
		return 0;
	while (n) {
		bool pass;
		size_t u = unit(p, n, flags, &pass);

		if (pass) {
			if (o + u >= len)
				break;
			memcpy(out + o, p, u);
			o += u;
		} else {
			if (o + 4 * u >= len)
				break;
			for (size_t i = 0; i < u; i++) {
				out[o++] = '\\';
				out[o++] = 'x';
				out[o++] = hex[p[i] >> 4];
				out[o++] = hex[p[i] & 15];
			}
		}
		p += u;
		n -= u;
	}
	out[o] = '\0';
	return o;
}

int termesc_fwrite(FILE *f, const char *s, size_t n, int flags)
{
	const unsigned char *p = (const unsigned char *)s;

	while (n) {
		bool pass;
		size_t u = unit(p, n, flags, &pass);

		if (pass) {
			if (fwrite(p, 1, u, f) != u)
				return EOF;
		} else {
			for (size_t i = 0; i < u; i++)
				if (fprintf(f, "\\x%02x", p[i]) < 0)
					return EOF;
		}
		p += u;
		n -= u;
	}
	return 0;
}
