/*
 * srv_services.c - the table of worker services.
 */
#include "server/srv_services.h"
#include "server/cmd/srv_script.h"
#include "server/srv_aclconn.h"
#include "server/srv_ask.h"
#include "server/srv_block.h"
#include "server/srv_clients.h"
#include "server/srv_keys.h"
#include "server/srv_link.h"
#include "server/srv_monitor.h"
#include "server/srv_pause.h"
#include "server/srv_pubsub.h"
#include "server/srv_track.h"

/* The link first: the features' services join it at their start. */
const srv_service *const srv_services[] = {
    &srv_link_service,
    &srv_pubsub_service,
    /* ==== issue 11 ==== */
    &srv_keys_service,
    &srv_block_service,
    &srv_ask_service,
    &srv_clients_service,
    &srv_pause_service,
    &srv_monitor_service,
    &srv_track_service,
    /* ==== issue 12 ==== */
    &srv_script_service,
    /* ==== issue 13 ==== */
    /* ==== issue 16 ==== */
    &srv_aclconn_service,
    NULL,
};
