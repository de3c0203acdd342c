/*
 * srv_cmd_conn.h - what the connection family's handlers share with other
 * modules: a connection's CLIENT LIST line.
 */
#ifndef SRV_CMD_CONN_H
#define SRV_CMD_CONN_H

#include <stddef.h>

#include "server/srv_conn.h"

/*
 * Write x's CLIENT LIST / CLIENT INFO line (Redis's fields, ending in a
 * newline) into buf[0..size), cut to fit. `cmd` names the command shown
 * in cmd= (NULL: the last one x ran; ACL LOG shows the denied one).
 */
void srv_cmd_conn_info(srv_conn *x, const char *cmd, char *buf, size_t size);

#endif
