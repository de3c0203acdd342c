/*
 * srv_cinfo.h - a client's CLIENT LIST / CLIENT INFO line with Redis's
 * fields (CLIENT LIST, CLIENT INFO, ACL LOG's client-info). Runs on the
 * client's worker.
 */
#ifndef SRV_CINFO_H
#define SRV_CINFO_H

#include "server/srv_buf.h"
#include "server/srv_conn.h"

/*
 * Append x's line (ending with '\n') to out: `user` is its ACL user's
 * name, `cmd` the command shown in cmd= (NULL: the last one x ran; ACL
 * LOG shows the denied one). 0 or -1 when out of memory.
 */
int srv_cinfo_line(srv_conn *x, const char *user, const char *cmd,
                   srv_buf *out);

#endif
