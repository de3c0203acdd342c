/*
 * srv_scriptgate.c - the scripting write gate as a writer meets it
 * (srv_scriptgate.h).
 */
#include "server/cmd/srv_scriptgate.h"
#include "server/srv_ask.h"
#include "server/srv_group.h"
#include "server/srv_heritage.h"
#include "server/srv_log.h"
#include "server/srv_reply.h"
#include "server/srv_scriptshm.h"
#include "server/srv_util.h"
#include "server/srv_worker.h"

#include <errno.h>

/* How long one wait for the gate lasts before the BUSY test again. */
#define GATE_SLICE_MS 5

const char SRV_SCRIPTGATE_BUSY_EVAL[] =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or "
    "SHUTDOWN NOSAVE.";
const char SRV_SCRIPTGATE_BUSY_FUNCTION[] =
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL "
    "or SHUTDOWN NOSAVE.";

static void gate_release(void *arg)
{
    srv_scriptshm_gate_release(srv_her.scripts);
}

int srv_scriptgate_enter_or_reply(srv_conn *c)
{
    srv_scriptshm_run r;
    int rc;

    if (!srv_her.scripts)
        return 0;
    for (;;) {
        /* Wait for the gate a slice at a time: a writer behind a script
         * that passed the threshold answers BUSY instead of waiting on. */
        rc = srv_scriptshm_gate_acquire(srv_her.scripts, GATE_SLICE_MS);
        if (rc == 0) {
            srv_group_on_wtxn_end(&c->worker->group, gate_release, NULL);
            return 0;
        }
        /* A script holding the gate may wait for this worker's part of
         * a question (who would receive its PUBLISH). */
        srv_ask_answer_waiting();
        if (rc != ETIMEDOUT) {
            srv_log(SRV_LOG_WARNING, rc > 0 ? rc : 0,
                    "the scripting write gate failed: writing without it");
            return 0;
        }
        if (srv_scriptshm_find(srv_her.scripts, c->worker->index, &r) &&
            (r.flags & SRV_SCRIPTSHM_WRITE) &&
            srv_util_monotonic_ms() - r.started_ms >=
                srv_her.cfg->busy_reply_threshold) {
            srv_reply_error(c, r.flags & SRV_SCRIPTSHM_FUNCTION
                                   ? SRV_SCRIPTGATE_BUSY_FUNCTION
                                   : SRV_SCRIPTGATE_BUSY_EVAL);
            return -1;
        }
    }
}
