/*
 * srv_role.c - the roles table, the role -> stats slot mapping and the
 * process's own record.
 */
#include "server/srv_role.h"

#include <stdio.h>

static const struct {
    const char *name;
    int flags;
} roles[] = {
#define X(e, name, flags) [SRV_ROLE_##e] = { name, flags },
    SRV_ROLES(X)
#undef X
};

_Static_assert(sizeof roles / sizeof roles[0] == SRV_NROLES, "a row per role");

/* The slots after the workers', in the order the stats region always had
 * them. */
enum { DUTY_REAPER, DUTY_SYNCER, DUTY_BROKER, NDUTIES };

_Static_assert(NDUTIES == SRV_ROLE_DUTY_SLOTS, "a slot per background role");

srv_proc srv_self = { SRV_ROLE_MASTER, -1, 0, -1 };

const char *srv_role_name(enum srv_role role)
{
    return (unsigned)role < SRV_NROLES ? roles[role].name : "?";
}

int srv_role_flags(enum srv_role role)
{
    return (unsigned)role < SRV_NROLES ? roles[role].flags : 0;
}

int srv_role_slot(enum srv_role role, int index, int nworkers)
{
    switch (role) {
    case SRV_ROLE_WORKER: return index;
    case SRV_ROLE_REAPER: return nworkers + DUTY_REAPER;
    case SRV_ROLE_SYNCER: return nworkers + DUTY_SYNCER;
    case SRV_ROLE_BROKER: return nworkers + DUTY_BROKER;
    default: return -1;
    }
}

int srv_role_nslots(int nworkers) { return nworkers + SRV_ROLE_DUTY_SLOTS; }

void srv_proc_init(srv_proc *p, enum srv_role role, int index, int nworkers)
{
    p->role = role;
    p->index = role == SRV_ROLE_WORKER ? index : -1;
    p->pid = 0;
    p->slot = srv_role_slot(role, p->index, nworkers);
}

int srv_proc_name(const srv_proc *p, char *buf, size_t size)
{
    if (p->index >= 0)
        return snprintf(buf, size, "%s#%d", srv_role_name(p->role), p->index);
    return snprintf(buf, size, "%s", srv_role_name(p->role));
}
