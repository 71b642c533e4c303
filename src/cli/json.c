/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * json.c - JSON string literals (RFC 8259) for `status --json`.
 *
 * Lock names and owner fields are arbitrary bytes. Output must still be
 * valid JSON, so valid UTF-8 passes through unchanged, control characters
 * are escaped and each byte of an invalid sequence becomes U+FFFD.
 */
#include "cli.h"

/* Length of the valid UTF-8 sequence at s (2..4), or 0 if there is none.
 * Rejects overlong forms, surrogates and code points above U+10FFFF. */
static int utf8_seq_len(const unsigned char *s) {
  int len;
  unsigned lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
  if (s[0] >= 0xC2 && s[0] <= 0xDF)
    len = 2;
  else if (s[0] >= 0xE0 && s[0] <= 0xEF)
    len = 3, lo = s[0] == 0xE0 ? 0xA0 : 0x80, hi = s[0] == 0xED ? 0x9F : 0xBF;
  else if (s[0] >= 0xF0 && s[0] <= 0xF4)
    len = 4, lo = s[0] == 0xF0 ? 0x90 : 0x80, hi = s[0] == 0xF4 ? 0x8F : 0xBF;
  else
    return 0;
  if (s[1] < lo || s[1] > hi)
    return 0;
  for (int i = 2; i < len; i++)
    if (s[i] < 0x80 || s[i] > 0xBF)
      return 0; /* also stops at the terminating NUL */
  return len;
}

static void put_ascii(FILE *out, unsigned char ch) {
  switch (ch) {
  case '"':
    fputs("\\\"", out);
    break;
  case '\\':
    fputs("\\\\", out);
    break;
  case '\b':
    fputs("\\b", out);
    break;
  case '\f':
    fputs("\\f", out);
    break;
  case '\n':
    fputs("\\n", out);
    break;
  case '\r':
    fputs("\\r", out);
    break;
  case '\t':
    fputs("\\t", out);
    break;
  default:
    if (ch < 0x20)
      fprintf(out, "\\u%04x", ch);
    else
      fputc(ch, out);
  }
}

void cli_json_string(FILE *out, const char *str) {
  const unsigned char *s = (const unsigned char *)str;
  fputc('"', out);
  while (*s != '\0') {
    if (*s < 0x80) {
      put_ascii(out, *s++);
      continue;
    }
    int len = utf8_seq_len(s);
    if (len == 0) {
      fputs("\\ufffd", out);
      s++;
    } else {
      fwrite(s, 1, (size_t)len, out);
      s += len;
    }
  }
  fputc('"', out);
}
