/*
 * srv_services.c - the table of worker services.
 */
#include "server/srv_services.h"
#include "server/srv_aclconn.h"
#include "server/srv_pubsub.h"

const srv_service *const srv_services[] = {
    &srv_pubsub_service,
    /* ==== issue 11 ==== */
    /* ==== issue 12 ==== */
    /* ==== issue 13 ==== */
    /* ==== issue 16 ==== */
    &srv_aclconn_service,
    NULL,
};
