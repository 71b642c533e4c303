/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_fake.h - a scripted fake Redis server, for failures a real server does
 * not produce on demand: truncated or garbage replies, connections closed
 * mid-command, replies that arrive late.
 *
 * The fake listens on 127.0.0.1:<free port> and plays a script on its own
 * thread, one step after the other, e.g.
 *
 *   static const rt_fake_step script[] = {
 *       RT_STEP_ACCEPT(),
 *       RT_STEP_EXPECT("EVALSHA"),
 *       RT_STEP_SEND("$10\r\nabc"),  // truncated bulk string ...
 *       RT_STEP_CLOSE(),              // ... then the connection drops
 *       RT_STEP_END(),
 *   };
 *   rt_fake *f = rt_fake_start(script);
 *   ... point the code under test at rt_fake_url(f) ...
 *   assert_int_equal(rt_fake_wait(f, 5000), 0);   // or print rt_fake_error(f)
 *   rt_fake_free(f);
 *
 * Connections: RT_EXPECT, RT_SEND, RT_TRICKLE, RT_FLOOD and RT_CLOSE act on
 * the most recently
 * accepted connection that is still open. A later RT_ACCEPT leaves earlier
 * connections open (but silent). When the script ends, open connections
 * stay open, unanswered, until rt_fake_free(); so does the listening socket.
 */
#ifndef RT_FAKE_H
#define RT_FAKE_H

#include <stddef.h>

typedef struct rt_fake rt_fake;

typedef enum {
  RT_ACCEPT,  /* wait for and accept the next client connection */
  RT_EXPECT,  /* read one complete request (a RESP array of bulk strings, as
                 hiredis sends) and check that its first word equals arg,
                 ignoring case; "*" accepts any request. A mismatch is
                 recorded as the error and the script goes on. */
  RT_SEND,    /* write arg, raw bytes (e.g. "+PONG\r\n", or a deliberately
                 truncated "$10\r\nabc") */
  RT_CLOSE,   /* close the connection */
  RT_SLEEP,   /* sleep ms milliseconds */
  RT_TRICKLE, /* write arg one byte at a time, pausing ms milliseconds
                 before each byte after the first: a server that keeps a
                 reply coming but never finishes it in time. Ends early,
                 without error, when the client closes the connection
                 (the fake then closes its end too). */
  RT_FLOOD,   /* write arg over and over, as fast as the client reads, until
                 the client closes the connection (then the fake closes its
                 end and the step ends without error) or the fake is freed:
                 e.g. RT_SEND
                 "$2147483647\r\n" then RT_FLOOD "xxxx". */
  RT_END,     /* end of the script: every step array ends with it */
} rt_step_kind;

typedef struct {
  rt_step_kind kind;
  const char *arg; /* RT_EXPECT, RT_SEND, RT_TRICKLE, RT_FLOOD */
  int ms;          /* RT_SLEEP, RT_TRICKLE */
} rt_fake_step;

/* Complete initializers for steps, so scripts compile cleanly also with
   -Wmissing-field-initializers ({ RT_SEND, "+OK\r\n" } works too). */
#define RT_STEP_ACCEPT()                                                       \
  { RT_ACCEPT, 0, 0 }
#define RT_STEP_EXPECT(word)                                                   \
  { RT_EXPECT, (word), 0 }
#define RT_STEP_SEND(bytes)                                                    \
  { RT_SEND, (bytes), 0 }
#define RT_STEP_CLOSE()                                                        \
  { RT_CLOSE, 0, 0 }
#define RT_STEP_SLEEP(ms)                                                      \
  { RT_SLEEP, 0, (ms) }
#define RT_STEP_TRICKLE(bytes, ms)                                             \
  { RT_TRICKLE, (bytes), (ms) }
#define RT_STEP_FLOOD(bytes)                                                   \
  { RT_FLOOD, (bytes), 0 }
#define RT_STEP_END()                                                          \
  { RT_END, 0, 0 }

/* Start the fake and its script. The steps, arg strings included, are
   copied. Fails the test (cmocka) on a malformed script or socket error. */
rt_fake *rt_fake_start(const rt_fake_step *steps);

int rt_fake_port(const rt_fake *f);
/* "redis://127.0.0.1:PORT"; valid until rt_fake_free(). */
const char *rt_fake_url(const rt_fake *f);

/*
 * Wait until every step has run: 0 if they all did without error, -1 on an
 * error (returned as soon as it happens) or when timeout_ms passes first;
 * rt_fake_error() then says why. Errors are: a request that does not match
 * RT_EXPECT, the client closing the connection or sending something that is
 * not RESP while a request is expected, no open connection for a step that
 * needs one, and I/O errors (all but the mismatch also stop the script).
 * A timeout is not sticky: rt_fake_wait() may be called again.
 */
int rt_fake_wait(rt_fake *f, int timeout_ms);

/*
 * Wait until the script has come to step `step` (counted from 0): every
 * step before it has run, e.g. a late reply has been sent or a connection
 * closed. 0 then; -1 on an error, when the script ended before that step,
 * or when timeout_ms passes first; rt_fake_error() then says why. For tests
 * that must act after the fake did something, instead of sleeping.
 */
int rt_fake_wait_step(rt_fake *f, size_t step, int timeout_ms);

/* Why the last rt_fake_wait() or rt_fake_wait_step() failed, or "" (never
   NULL). Valid until the next of those calls or rt_fake_free(). */
const char *rt_fake_error(const rt_fake *f);

/* Stop the script thread wherever it is waiting (accept, read, sleep), close
   every socket and free. NULL is ignored. */
void rt_fake_free(rt_fake *f);

#endif /* RT_FAKE_H */
