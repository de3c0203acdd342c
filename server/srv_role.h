/*
 * srv_role.h - the roles of larder's processes as one table (master,
 * worker, reaper, syncer, broker) with their names, the record the master
 * keeps for each child (role, index, pid, stats slot), and the one place
 * that maps a role to its stats slot. Every process knows its own record
 * (srv_self): the master fills it in before it forks the child.
 */
#ifndef SRV_ROLE_H
#define SRV_ROLE_H

#include <stddef.h>
#include <sys/types.h>

/* Flags of a role. */
#define SRV_ROLE_CONFIRMS                           \
    0x1 /* acts on settings clients observe: CONFIG \
         * SET waits until it has applied a change */

/*
 * X(ENUM, name, flags). Stats slots follow this order: one per worker,
 * then one each for the reaper, the syncer and the broker; the master has
 * none. A new role goes before SRV_NROLES and gets its slot in
 * srv_role_slot().
 */
#define SRV_ROLES(X)                       \
    X(MASTER, "master", 0)                 \
    X(WORKER, "worker", SRV_ROLE_CONFIRMS) \
    X(REAPER, "reaper", 0)                 \
    X(SYNCER, "syncer", 0)                 \
    X(BROKER, "broker", SRV_ROLE_CONFIRMS)

enum srv_role {
#define X(e, name, flags) SRV_ROLE_##e,
    SRV_ROLES(X)
#undef X
        SRV_NROLES
};

/* Stats slots after the workers' ones: reaper, syncer, broker. */
#define SRV_ROLE_DUTY_SLOTS 3

/* One process of the tree, as the master supervises it. */
typedef struct srv_proc {
    enum srv_role role;
    int index; /* worker number; -1 for the other roles */
    pid_t pid; /* 0: not running */
    int slot;  /* stats slot; -1 for the master */
} srv_proc;

/* This process's own record: the master's until a fork gives the child
 * its own (set by the master in the child before it runs its role). */
extern srv_proc srv_self;

/* "worker", "reaper"...: the role's name (a static string). */
const char *srv_role_name(enum srv_role role);

/* The role's SRV_ROLE_* flags. */
int srv_role_flags(enum srv_role role);

/*
 * The stats slot of a process of `role` (`index`: the worker number,
 * ignored for the other roles) in a tree of `nworkers` workers; -1 for the
 * master, which has none. Any process may call it.
 */
int srv_role_slot(enum srv_role role, int index, int nworkers);

/* Number of stats slots a tree of `nworkers` workers uses. */
int srv_role_nslots(int nworkers);

/* Fill *p for a process of `role` (`index` as above) that is not running
 * yet: pid 0, slot from srv_role_slot. */
void srv_proc_init(srv_proc *p, enum srv_role role, int index, int nworkers);

/*
 * Write p's log name into buf (size bytes, always terminated): the role,
 * with "#index" for workers ("worker#2", "reaper"). Returns what snprintf
 * returns.
 */
int srv_proc_name(const srv_proc *p, char *buf, size_t size);

#endif
