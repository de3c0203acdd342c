/*
 * srv_notify.c - keyspace notifications' flag letters, parsed and printed
 * as Redis does (the events themselves: srv_notify.h's inline calls into
 * srv_keys.h).
 */
#include "server/srv_notify.h"
#include <stdio.h>

#include <string.h>

/* Letter and class, in the order CONFIG GET prints them. */
static const struct {
    char letter;
    int flag;
} classes[] = {
    { 'g', SRV_NOTIFY_GENERIC }, { '$', SRV_NOTIFY_STRING },
    { 'l', SRV_NOTIFY_LIST },    { 's', SRV_NOTIFY_SET },
    { 'h', SRV_NOTIFY_HASH },    { 'z', SRV_NOTIFY_ZSET },
    { 'x', SRV_NOTIFY_EXPIRED }, { 'e', SRV_NOTIFY_EVICTED },
    { 't', SRV_NOTIFY_STREAM },  { 'd', SRV_NOTIFY_MODULE },
    { 'n', SRV_NOTIFY_NEW },
};
#define NCLASSES (sizeof classes / sizeof classes[0])

int srv_notify_parse(const char *s, long long *flags)
{
    long long f = 0;

    for (; *s; s++) {
        size_t i;
        switch (*s) {
        case 'A': f |= SRV_NOTIFY_ALL; continue;
        case 'K': f |= SRV_NOTIFY_KEYSPACE; continue;
        case 'E': f |= SRV_NOTIFY_KEYEVENT; continue;
        case 'm': f |= SRV_NOTIFY_KEY_MISS; continue;
        default: break;
        }
        for (i = 0; i < NCLASSES && classes[i].letter != *s; i++)
            ;
        if (i == NCLASSES)
            return -1;
        f |= classes[i].flag;
    }
    *flags = f;
    return 0;
}

void srv_notify_format(long long flags, char *out, size_t size)
{
    char buf[SRV_NOTIFY_FLAGS_MAX];
    size_t n = 0;

    /* As Redis 7.0 prints them: with every class "A" alone, which also
     * hides an 'n' that is set. */
    if ((flags & SRV_NOTIFY_ALL) == SRV_NOTIFY_ALL) {
        buf[n++] = 'A';
    } else {
        for (size_t i = 0; i < NCLASSES; i++)
            if (flags & classes[i].flag)
                buf[n++] = classes[i].letter;
    }
    if (flags & SRV_NOTIFY_KEYSPACE)
        buf[n++] = 'K';
    if (flags & SRV_NOTIFY_KEYEVENT)
        buf[n++] = 'E';
    if (flags & SRV_NOTIFY_KEY_MISS)
        buf[n++] = 'm';
    buf[n] = '\0';
    snprintf(out, size, "%s", buf);
}
