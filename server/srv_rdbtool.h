/*
 * srv_rdbtool.h - larder-server's one-shot modes around RDB files:
 *
 *   larder-server [config] [--directive value ...] --import-rdb FILE
 *   larder-server [config] [--directive value ...] --export-rdb FILE
 *
 * The import loads a Redis RDB (versions 5 to 10: Redis 2.6 to 7.0) into
 * the data directory of the configuration (srv_rdbfile.h: staged, then
 * switched in whole), with progress on stderr and a summary; it refuses
 * to run while any process (a running server) has the data directory
 * open. The export writes FILE (through FILE.tmp, flushed, then renamed)
 * as an RDB that redis-server 7.0 loads; it may run beside a server. Both
 * exit 0 on success and 1 with a one-line reason otherwise.
 */
#ifndef SRV_RDBTOOL_H
#define SRV_RDBTOOL_H

enum srv_rdbtool_mode {
    SRV_RDBTOOL_NONE,
    SRV_RDBTOOL_IMPORT,
    SRV_RDBTOOL_EXPORT
};

/*
 * Take "--import-rdb FILE" or "--export-rdb FILE" out of the command
 * line (argv is compacted, *argc lowered), so the rest parses as
 * configuration. Returns the mode (SRV_RDBTOOL_NONE when absent) with
 * *path set, or -1 with *path naming the problem (missing FILE, both
 * options).
 */
int srv_rdbtool_take_args(int *argc, char **argv, const char **path);

/* Run `mode` on `path` with the loaded configuration (srv_her.cfg); the
 * process's exit status. */
int srv_rdbtool_run(int mode, const char *path);

#endif
