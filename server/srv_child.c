/*
 * srv_child.c - the common start of the master's background children.
 */
#include "server/srv_child.h"
#include "server/srv_heritage.h"
#include "server/srv_log.h"
#include "server/srv_util.h"
#include "storage/st_err.h"

#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

volatile sig_atomic_t srv_child_stop;

static void on_term(int sig) { srv_child_stop = 1; }

int srv_child_start(srv_stats_slot *slot)
{
    struct sigaction sa;

    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != srv_her.master_pid)
        return -1;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    atomic_store(&slot->pid, getpid());
    atomic_store(&slot->started_ms, srv_util_mstime());
    return 0;
}

int srv_child_env_open(st_env **env)
{
    int rc = srv_heritage_env_open(1, env);

    if (rc) {
        srv_log(SRV_LOG_WARNING, rc > 0 ? rc : 0,
                "opening LMDB in '%s' failed: %s", srv_her.cfg->dir,
                st_strerror(rc));
        return -1;
    }
    return 0;
}
