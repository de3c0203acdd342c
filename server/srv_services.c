/*
 * srv_services.c - the table of worker services.
 */
#include "server/srv_services.h"
#include "server/cmd/srv_script.h"
#include "server/srv_pubsub.h"

const srv_service *const srv_services[] = {
    &srv_pubsub_service,
    /* ==== issue 11 ==== */
    /* ==== issue 12 ==== */
    &srv_script_service,
    /* ==== issue 13 ==== */
    NULL,
};
