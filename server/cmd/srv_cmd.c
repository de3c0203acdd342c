/*
 * srv_cmd.c - the command table and its lookup index.
 */
#include "server/cmd/srv_cmd.h"

#include <ctype.h>
#include <string.h>

#define NAME_MAX_LEN 32
#define INDEX_SIZE 256          /* power of two, > 2x the commands */

static srv_command table[] = {
#define CMD(fn, name, arity, flags, fk, lk, ks, group, since, summary) \
    { name, srv_cmd_##fn, arity, flags, fk, lk, ks, group, since, summary, 0 },
#include "server/cmd/srv_commands.def"
#undef CMD
};
#define NCOMMANDS ((int)(sizeof table / sizeof table[0]))

static srv_command *index_[INDEX_SIZE];

static unsigned name_hash(const char *lower, size_t len)
{
    unsigned h = 2166136261u;           /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)lower[i]) * 16777619u;
    return h;
}

void srv_cmd_init(void)
{
    memset(index_, 0, sizeof index_);
    for (int i = 0; i < NCOMMANDS; i++) {
        unsigned h = name_hash(table[i].name, strlen(table[i].name));
        while (index_[h & (INDEX_SIZE - 1)])
            h++;
        index_[h & (INDEX_SIZE - 1)] = &table[i];
    }
}

const srv_command *srv_cmd_lookup(const char *name, size_t len)
{
    char lower[NAME_MAX_LEN];

    if (len == 0 || len >= NAME_MAX_LEN)
        return NULL;
    for (size_t i = 0; i < len; i++)
        lower[i] = (char)tolower((unsigned char)name[i]);
    for (unsigned h = name_hash(lower, len);; h++) {
        srv_command *c = index_[h & (INDEX_SIZE - 1)];
        if (!c)
            return NULL;
        if (strlen(c->name) == len && memcmp(c->name, lower, len) == 0)
            return c;
    }
}

const srv_command *srv_cmd_table(int *count)
{
    *count = NCOMMANDS;
    return table;
}

