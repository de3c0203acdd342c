/*
 * srv_master.h - the master process: configuration, listeners, shared
 * regions, forking and supervising the children, signals, shutdown.
 */
#ifndef SRV_MASTER_H
#define SRV_MASTER_H

/* Run larder-server with its command line; returns the exit status. */
int srv_master_main(int argc, char **argv);

#endif
