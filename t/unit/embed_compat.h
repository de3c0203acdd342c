/*
 * embed_compat.h - the embedded worker under the names the command suites
 * use (srv_embed_open / _conn / _feed / _close, as server/srv_embed.h is
 * to declare them), mapped for now onto srv_worker.h's srv_worker_embed_*
 * (same signatures and meaning). When server/srv_embed.h lands, set
 * UNIT_EMBED_LEGACY to 0: that one line switches every suite over.
 */
#ifndef EMBED_COMPAT_H
#define EMBED_COMPAT_H

#define UNIT_EMBED_LEGACY 1

#if UNIT_EMBED_LEGACY
#include "server/srv_worker.h"
#define srv_embed_open srv_worker_embed_open
#define srv_embed_conn srv_worker_embed_conn
#define srv_embed_feed srv_worker_embed_feed
#define srv_embed_close srv_worker_embed_close
#else
#include "server/srv_embed.h"
#endif

#endif
