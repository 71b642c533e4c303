/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_proxy.h - a TCP relay between clients and a server that can make
 * chosen connections go silent without closing them: the fault of a NAT or
 * a firewall that forgets a flow, which neither end is told of.
 *
 * It relays every connection it accepts to the upstream server, byte for
 * byte, on one thread of its own. rt_proxy_silence_subscribers() picks the
 * open connections whose client has sent SUBSCRIBE, SSUBSCRIBE or
 * PSUBSCRIBE (a lock client's subscriber connections) and stops relaying
 * them, both ways; their sockets stay open, so each end just stops hearing
 * from the other. Connections opened later are relayed normally. When a
 * client closes a silent connection (its health check gave up on it), the
 * proxy closes the server's side too and counts it.
 *
 * Failures to start are reported with cmocka's fail_msg(): call
 * rt_proxy_start() from the test's own thread. The other calls may come
 * from any thread.
 */
#ifndef RT_PROXY_H
#define RT_PROXY_H

typedef struct rt_proxy rt_proxy;

/* Listen on listen_host (an address of this network namespace) on a free
   port, relaying to up_host:up_port. Free with rt_proxy_free(). */
rt_proxy *rt_proxy_start(const char *listen_host, const char *up_host,
                         int up_port);
/* Close every connection, stop the thread, free. NULL is ignored. */
void rt_proxy_free(rt_proxy *p);

int rt_proxy_port(const rt_proxy *p);
/* "redis://LISTEN_HOST:PORT"; valid until rt_proxy_free(). */
const char *rt_proxy_url(const rt_proxy *p);

/* Silence the subscriber connections open now (see above); how many. */
int rt_proxy_silence_subscribers(rt_proxy *p);
/* Relay on the silenced connections again: what either end sent meanwhile
   arrives now. */
void rt_proxy_resume(rt_proxy *p);

/* Connections open now; silenced ones that their client closed while they
   were silent, since the start. */
int rt_proxy_open(rt_proxy *p);
int rt_proxy_closed_while_silent(rt_proxy *p);

#endif /* RT_PROXY_H */
