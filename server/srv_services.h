/*
 * srv_services.h - the worker services every worker of the pool runs
 * (srv_worker.h): the one place that names them, so the worker does not.
 */
#ifndef SRV_SERVICES_H
#define SRV_SERVICES_H

#include "server/srv_worker.h"

/* NULL-terminated, in start order. */
extern const srv_service *const srv_services[];

#endif
