/*
 * srv_broker.h - the pub/sub broker process: the hub every worker connects
 * to. It keeps, per channel, pattern and shard channel, how many
 * subscriptions each connected worker has (workers report absolute
 * counts), fans each PUBLISH out to the workers with a subscriber on the
 * channel or a matching pattern, answers the publisher's worker with the
 * receiver count, and answers PUBSUB CHANNELS / NUMSUB / NUMPAT. A
 * worker's counts go when its connection closes. Frames: srv_bproto.h.
 */
#ifndef SRV_BROKER_H
#define SRV_BROKER_H

/*
 * Master, before forking: create the broker's listening socket, a Unix
 * stream socket on an abstract address made of the master's pid and a
 * random nonce (nothing on disk to leak). The master keeps it, so workers
 * can connect while a broker is being respawned (their connections wait
 * in the backlog). Sets srv_her.broker_fd and srv_her.broker_name.
 * Returns 0 or an errno.
 */
int srv_broker_listen(void);

/*
 * Workers: start a nonblocking connection to the broker. Returns the
 * descriptor (connected, or in progress: EINPROGRESS is not reported), or
 * -1 with errno set.
 */
int srv_broker_connect(void);

/* Run the broker until SIGTERM or the master's death; the exit status. */
int srv_broker_main(void);

#endif
