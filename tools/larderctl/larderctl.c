/*
 * larderctl - control a running larder-server through its admin socket
 * (srv_admin.h): status, workers, reload, backup, stop, cache, config,
 * loglevel. Human output by default (aligned columns), --json for
 * scripts; exit codes scripts can rely on (LCTL_EXIT_* below, and the
 * man page larderctl(1)).
 *
 * The socket is found from -s PATH, else $LARDER_ADMIN_SOCKET, else the
 * `dir` and `admin-socket` of the config file (-c FILE, default the
 * installed larder.conf).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#ifndef LARDERCTL_CONFIG
#define LARDERCTL_CONFIG "/usr/local/etc/larder/larder.conf"
#endif
#ifndef LARDERCTL_VERSION
#define LARDERCTL_VERSION "0.1.0"
#endif

/* Exit codes. */
#define LCTL_EXIT_OK 0
#define LCTL_EXIT_FAILED 1      /* the server refused or the operation failed */
#define LCTL_EXIT_USAGE 2       /* bad command line */
#define LCTL_EXIT_NOT_RUNNING 3 /* no server at the socket */
#define LCTL_EXIT_DENIED 4      /* the socket is not ours to use */
#define LCTL_EXIT_PROTOCOL 5    /* the connection broke, or a bad reply */

#define PATH_MAX_ 4096
#define LINE_MAX_ 8192
#define READ_CHUNK 65536
#define DEFAULT_SOCKET "larder-admin.sock"
#define DEFAULT_DIR "./var"
#define POLL_BACKUP_MS 200
#define STOP_POLL_MS 100
#define STOP_WAIT_S 60
#define MS_PER_S 1000
#define NS_PER_MS 1000000L
#define KIB 1024.0
#define PERCENT 100.0
#define COLS_MAX 16

static const char *progname = "larderctl";
static int json;

/* ---- errors ---- */

static void fail(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));

static void fail(int code, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "%s: ", progname);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(code);
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);

    if (!p)
        fail(LCTL_EXIT_FAILED, "out of memory");
    return p;
}

/* ---- RESP ---- */

typedef struct reply {
    char type; /* + - : $ * % (a map: elem holds key, value, ...); null: n */
    long long integer;
    char *str; /* + - $ */
    size_t len;
    struct reply **elem; /* * */
    size_t nelem;
} reply;

typedef struct conn {
    int fd;
    char *buf;
    size_t len, pos, cap;
    const char *path;
} conn;

static void reply_free(reply *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->nelem; i++)
        reply_free(r->elem[i]);
    free(r->elem);
    free(r->str);
    free(r);
}

/* The one connection, freed at exit (whichever path exits). */
static conn ctl_conn = { .fd = -1 };

static void ctl_conn_free(void)
{
    if (ctl_conn.fd >= 0)
        close(ctl_conn.fd);
    ctl_conn.fd = -1;
    free(ctl_conn.buf);
    ctl_conn.buf = NULL;
}

static int conn_open(conn *c, const char *path)
{
    struct sockaddr_un sa;

    memset(c, 0, sizeof *c);
    c->path = path;
    if (strlen(path) >= sizeof sa.sun_path)
        fail(LCTL_EXIT_USAGE, "socket path too long: %s", path);
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    memcpy(sa.sun_path, path, strlen(path));
    if ((c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
        fail(LCTL_EXIT_FAILED, "socket(): %s", strerror(errno));
    if (connect(c->fd, (struct sockaddr *)&sa, sizeof sa)) {
        int e = errno;
        close(c->fd);
        c->fd = -1;
        return e;
    }
    return 0;
}

static reply *call(conn *c, int argc, const char *const *argv);
static void reply_free(reply *r);

/* Connect, or exit with the code that says why not; then speak RESP3,
 * whose maps say which replies are maps. */
static void conn_must_open(conn *c, const char *path)
{
    int e = conn_open(c, path);

    if (e == 0) {
        reply_free(call(c, 2, (const char *const[]){ "HELLO", "3" }));
        return;
    }
    if (e == ENOENT || e == ECONNREFUSED)
        fail(LCTL_EXIT_NOT_RUNNING,
             "larder-server is not running (no admin socket at %s: %s)", path,
             strerror(e));
    if (e == EACCES || e == EPERM)
        fail(LCTL_EXIT_DENIED,
             "permission denied on the admin socket %s (it is mode 0600: "
             "run as the server's user)",
             path);
    if (e)
        fail(LCTL_EXIT_FAILED, "can't connect to %s: %s", path, strerror(e));
}

static void send_command(conn *c, int argc, const char *const *argv)
{
    size_t cap = 64, n = 0;
    char *out;

    for (int i = 0; i < argc; i++)
        cap += strlen(argv[i]) + 32;
    out = xcalloc(cap, 1);
    n += (size_t)snprintf(out + n, cap - n, "*%d\r\n", argc);
    for (int i = 0; i < argc; i++)
        n += (size_t)snprintf(out + n, cap - n, "$%zu\r\n%s\r\n",
                              strlen(argv[i]), argv[i]);
    for (size_t off = 0; off < n;) {
        ssize_t w = write(c->fd, out + off, n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            fail(LCTL_EXIT_PROTOCOL, "writing to %s: %s", c->path,
                 strerror(errno));
        off += (size_t)w;
    }
    free(out);
}

/* More bytes into c->buf; 0 at EOF. */
static int fill(conn *c)
{
    if (c->cap - c->len < READ_CHUNK) {
        c->cap = c->cap * 2 + READ_CHUNK;
        char *p = realloc(c->buf, c->cap);
        if (!p)
            fail(LCTL_EXIT_FAILED, "out of memory");
        c->buf = p;
    }
    ssize_t n;
    while ((n = read(c->fd, c->buf + c->len, c->cap - c->len)) < 0 &&
           errno == EINTR)
        ;
    if (n < 0)
        fail(LCTL_EXIT_PROTOCOL, "reading from %s: %s", c->path,
             strerror(errno));
    c->len += (size_t)n;
    return n > 0;
}

static char *line(conn *c)
{
    for (;;) {
        char *nl = c->pos < c->len
                       ? memchr(c->buf + c->pos, '\n', c->len - c->pos)
                       : NULL;
        if (nl && nl > c->buf + c->pos && nl[-1] == '\r') {
            char *s = c->buf + c->pos;
            nl[-1] = '\0';
            c->pos = (size_t)(nl - c->buf) + 1;
            return s;
        }
        if (!fill(c))
            return NULL;
    }
}

/* The next reply; NULL if the server closed the connection. */
static reply *read_reply(conn *c)
{
    char *l = line(c);
    reply *r;

    if (!l)
        return NULL;
    r = xcalloc(1, sizeof *r);
    r->type = l[0];
    switch (l[0]) {
    case '+':
    case '-':
        r->str = strdup(l + 1);
        r->len = strlen(l + 1);
        break;
    case ':': r->integer = strtoll(l + 1, NULL, 10); break;
    case '$': {
        long long n = strtoll(l + 1, NULL, 10);
        if (n < 0) {
            r->type = 'n';
            break;
        }
        while (c->len - c->pos < (size_t)n + 2)
            if (!fill(c))
                fail(LCTL_EXIT_PROTOCOL, "the server closed the connection");
        r->str = xcalloc((size_t)n + 1, 1);
        memcpy(r->str, c->buf + c->pos, (size_t)n);
        r->len = (size_t)n;
        c->pos += (size_t)n + 2;
        break;
    }
    case '_': r->type = 'n'; break;
    case '*':
    case '%': {
        long long n = strtoll(l + 1, NULL, 10);
        if (n < 0) {
            r->type = 'n';
            break;
        }
        if (l[0] == '%')
            n *= 2;
        r->elem = xcalloc((size_t)n, sizeof *r->elem);
        for (long long i = 0; i < n; i++) {
            /* line() may move the buffer: fetch elements one by one. */
            if (!(r->elem[i] = read_reply(c)))
                fail(LCTL_EXIT_PROTOCOL, "the server closed the connection");
            r->nelem++;
        }
        break;
    }
    default: fail(LCTL_EXIT_PROTOCOL, "unexpected reply '%s'", l);
    }
    return r;
}

/* Send argv and read its reply; a connection closed first is an error. */
static reply *call(conn *c, int argc, const char *const *argv)
{
    reply *r;

    send_command(c, argc, argv);
    if (!(r = read_reply(c)))
        fail(LCTL_EXIT_PROTOCOL, "the server closed the connection");
    return r;
}

static reply *call_v(conn *c, ...)
{
    const char *argv[COLS_MAX];
    int argc = 0;
    va_list ap;

    va_start(ap, c);
    for (const char *a; argc < COLS_MAX && (a = va_arg(ap, const char *));)
        argv[argc++] = a;
    va_end(ap);
    return call(c, argc, argv);
}

/* An error reply ends the program with LCTL_EXIT_FAILED. */
static reply *checked(reply *r)
{
    if (r->type == '-') {
        if (json)
            printf("{\"error\":\"%s\"}\n", r->str);
        fail(LCTL_EXIT_FAILED, "%s", r->str);
    }
    return r;
}

/* The value of `key` in a flat map reply; NULL if absent. */
static reply *field(const reply *map, const char *key)
{
    for (size_t i = 0; map && map->type == '%' && i + 1 < map->nelem; i += 2)
        if (map->elem[i]->str && !strcmp(map->elem[i]->str, key))
            return map->elem[i + 1];
    return NULL;
}

static long long num(const reply *map, const char *key)
{
    reply *v = field(map, key);

    return v ? (v->type == ':' ? v->integer : v->str ? atoll(v->str) : 0) : 0;
}

static const char *text(const reply *map, const char *key)
{
    reply *v = field(map, key);

    return v && v->str ? v->str : "";
}

/* ---- JSON output ---- */

static void json_string(FILE *f, const char *s, size_t n)
{
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch == '\n')
            fputs("\\n", f);
        else if (ch < ' ')
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

/* A reply as JSON: maps as objects, integers as numbers. */
static void json_reply(FILE *f, const reply *r)
{
    int is_map = r->type == '%';

    switch (r->type) {
    case ':': fprintf(f, "%lld", r->integer); return;
    case 'n': fputs("null", f); return;
    case '+':
    case '$': json_string(f, r->str, r->len); return;
    case '-':
        fputs("{\"error\":", f);
        json_string(f, r->str, r->len);
        fputc('}', f);
        return;
    default: break;
    }
    fputc(is_map ? '{' : '[', f);
    for (size_t i = 0; i < r->nelem; i++) {
        if (i)
            fputc(',', f);
        if (is_map) {
            json_reply(f, r->elem[i++]);
            fputc(':', f);
        }
        json_reply(f, r->elem[i]);
    }
    fputc(is_map ? '}' : ']', f);
}

/* ---- human output ---- */

static void human_bytes(char *out, size_t size, double n)
{
    static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    int u = 0;

    while (n >= KIB && u < 4) {
        n /= KIB;
        u++;
    }
    snprintf(out, size, u ? "%.1f %s" : "%.0f %s", n, units[u]);
}

static void human_age(char *out, size_t size, long long s)
{
    if (s < 0)
        snprintf(out, size, "-");
    else if (s < 60)
        snprintf(out, size, "%llds", s);
    else if (s < 3600)
        snprintf(out, size, "%lldm%02llds", s / 60, s % 60);
    else if (s < 86400)
        snprintf(out, size, "%lldh%02lldm", s / 3600, (s % 3600) / 60);
    else
        snprintf(out, size, "%lldd%02lldh", s / 86400, (s % 86400) / 3600);
}

/* A table: rows of cells, printed with each column as wide as its
 * widest cell, numbers right-aligned. */
#define ROWS_MAX 512
typedef struct table {
    int ncols, nrows;
    const char *head[COLS_MAX];
    int right[COLS_MAX];
    char *cell[ROWS_MAX][COLS_MAX];
} table;

static void table_add(table *t, int col, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void table_add(table *t, int col, const char *fmt, ...)
{
    char buf[LINE_MAX_];
    va_list ap;

    if (t->nrows >= ROWS_MAX)
        return;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    t->cell[t->nrows][col] = strdup(buf);
}

static void table_print(table *t)
{
    size_t w[COLS_MAX] = { 0 };

    for (int c = 0; c < t->ncols; c++) {
        w[c] = strlen(t->head[c]);
        for (int r = 0; r < t->nrows; r++)
            if (t->cell[r][c] && strlen(t->cell[r][c]) > w[c])
                w[c] = strlen(t->cell[r][c]);
    }
    for (int r = -1; r < t->nrows; r++) {
        for (int c = 0; c < t->ncols; c++) {
            const char *v = r < 0           ? t->head[c]
                            : t->cell[r][c] ? t->cell[r][c]
                                            : "";
            int last = c == t->ncols - 1;
            if (t->right[c])
                printf("%*s%s", (int)w[c], v, last ? "" : "  ");
            else if (last)
                printf("%s", v);
            else
                printf("%-*s  ", (int)w[c], v);
        }
        putchar('\n');
    }
    for (int r = 0; r < t->nrows; r++)
        for (int c = 0; c < t->ncols; c++)
            free(t->cell[r][c]);
}

/* ---- the commands ---- */

static int cmd_status(conn *c)
{
    reply *r = checked(call_v(c, "STATUS", NULL));
    reply *procs = field(r, "processes");
    static table t;
    char age[64], bytes[64];

    if (json) {
        json_reply(stdout, r);
        putchar('\n');
        reply_free(r);
        return LCTL_EXIT_OK;
    }
    human_age(age, sizeof age, num(r, "uptime_s"));
    printf("larder %s (Redis %s protocol), master pid %lld, up %s\n",
           text(r, "version"), text(r, "redis_version"), num(r, "pid"), age);
    printf("workers: %lld asked, %lld running, at most %lld; %lld clients "
           "connected\n\n",
           num(r, "workers"), num(r, "workers_running"), num(r, "workers_max"),
           num(r, "connected_clients"));
    static const char *const head[] = { "NAME",   "PID",      "STATE",
                                        "UPTIME", "CLIENTS",  "COMMANDS",
                                        "RSS",    "RESPAWNS", "LAST EXIT" };
    static const int right[] = { 0, 1, 0, 1, 1, 1, 1, 1, 0 };
    memset(&t, 0, sizeof t);
    t.ncols = (int)(sizeof head / sizeof head[0]);
    for (int i = 0; i < t.ncols; i++) {
        t.head[i] = head[i];
        t.right[i] = right[i];
    }
    for (size_t i = 0; procs && i < procs->nelem; i++) {
        const reply *p = procs->elem[i];
        long long pid = num(p, "pid");
        table_add(&t, 0, "%s", text(p, "name"));
        table_add(&t, 1, pid ? "%lld" : "-", pid);
        table_add(&t, 2, "%s", text(p, "state"));
        human_age(age, sizeof age, pid ? num(p, "uptime_s") : -1);
        table_add(&t, 3, "%s", age);
        table_add(&t, 4, "%lld", num(p, "connections"));
        table_add(&t, 5, "%lld", num(p, "commands"));
        human_bytes(bytes, sizeof bytes, (double)num(p, "rss_bytes"));
        table_add(&t, 6, "%s", pid ? bytes : "-");
        table_add(&t, 7, "%lld", num(p, "respawns"));
        if (text(p, "last_exit")[0]) {
            human_age(age, sizeof age, num(p, "last_exit_age_s"));
            table_add(&t, 8, "%s, %s ago", text(p, "last_exit"), age);
        } else {
            table_add(&t, 8, "-");
        }
        t.nrows++;
    }
    table_print(&t);
    reply_free(r);
    return LCTL_EXIT_OK;
}

/* Print a reply: JSON, or as a scalar, a list or "key  value" lines. */
static void print_reply(const reply *r)
{
    if (json) {
        json_reply(stdout, r);
        putchar('\n');
        return;
    }
    if (r->type == ':') {
        printf("%lld\n", r->integer);
        return;
    }
    if (r->type == '+' || r->type == '$') {
        printf("%s\n", r->str);
        return;
    }
    if (r->type == 'n') {
        puts("(nil)");
        return;
    }
    if (r->type == '*') {
        for (size_t i = 0; i < r->nelem; i++)
            printf("%s\n", r->elem[i]->str ? r->elem[i]->str : "");
        return;
    }
    size_t w = 0;
    for (size_t i = 0; i + 1 < r->nelem; i += 2)
        if (r->elem[i]->str && strlen(r->elem[i]->str) > w)
            w = strlen(r->elem[i]->str);
    for (size_t i = 0; i + 1 < r->nelem; i += 2) {
        const reply *v = r->elem[i + 1];
        if (v->type == ':')
            printf("%-*s  %lld\n", (int)w, r->elem[i]->str, v->integer);
        else if (v->type == '*') {
            printf("%-*s ", (int)w, r->elem[i]->str);
            for (size_t k = 0; k < v->nelem; k++)
                printf(" %s", v->elem[k]->str ? v->elem[k]->str : "");
            printf("%s\n", v->nelem ? "" : " -");
        } else
            printf("%-*s  %s\n", (int)w, r->elem[i]->str, v->str ? v->str : "");
    }
}

static int simple(conn *c, int argc, const char *const *argv)
{
    reply *r = checked(call(c, argc, argv));

    print_reply(r);
    reply_free(r);
    return LCTL_EXIT_OK;
}

/* The backup: start it, then follow it until it ends, with progress on
 * standard error (a bar on a terminal, else a line every 10%). */
static int cmd_backup(conn *c, const char *file, int wait)
{
    char path[PATH_MAX_], a[64], b[64];
    int tty = isatty(STDERR_FILENO), last_decile = -1;
    reply *r;

    if (file[0] == '/')
        snprintf(path, sizeof path, "%s", file);
    else {
        char cwd[PATH_MAX_];
        if (!getcwd(cwd, sizeof cwd))
            fail(LCTL_EXIT_FAILED, "getcwd(): %s", strerror(errno));
        if ((size_t)snprintf(path, sizeof path, "%.*s/%.*s", PATH_MAX_ / 2, cwd,
                             PATH_MAX_ / 2 - 2, file) >= sizeof path)
            fail(LCTL_EXIT_USAGE, "backup: the path is too long");
    }
    reply_free(checked(call_v(c, "BACKUP", path, NULL)));
    if (!wait) {
        if (json)
            printf("{\"state\":\"running\",\"path\":\"%s\"}\n", path);
        else
            printf("backup to %s started\n", path);
        return LCTL_EXIT_OK;
    }
    for (;;) {
        struct timespec ts = { 0, POLL_BACKUP_MS * NS_PER_MS };
        r = checked(call_v(c, "BACKUP", "STATUS", NULL));
        const char *state = text(r, "state");
        long long done = num(r, "bytes"), total = num(r, "total");
        if (strcmp(state, "running") != 0) {
            if (tty && !json)
                fputc('\n', stderr);
            if (json) {
                json_reply(stdout, r);
                putchar('\n');
            } else if (!strcmp(state, "done")) {
                human_bytes(a, sizeof a, (double)done);
                printf("backup done: %s (%s in %.1f s)\n", path, a,
                       (double)num(r, "elapsed_ms") / MS_PER_S);
            }
            int ok = !strcmp(state, "done");
            if (!ok)
                fprintf(stderr, "%s: backup to %s failed: %s\n", progname, path,
                        text(r, "error"));
            reply_free(r);
            return ok ? LCTL_EXIT_OK : LCTL_EXIT_FAILED;
        }
        double pct = total > 0 ? (double)done * PERCENT / (double)total : 0;
        if (pct > PERCENT)
            pct = PERCENT;
        human_bytes(a, sizeof a, (double)done);
        human_bytes(b, sizeof b, (double)total);
        if (tty)
            fprintf(stderr, "\rbacking up: %5.1f%% (%s of about %s)   ", pct, a,
                    b);
        else if ((int)(pct / 10) > last_decile) {
            last_decile = (int)(pct / 10);
            fprintf(stderr, "backing up: %.0f%% (%s of about %s)\n", pct, a, b);
        }
        reply_free(r);
        nanosleep(&ts, NULL);
    }
}

/* pid has exited (gone, or a zombie its parent has not reaped yet). */
static int exited(pid_t pid)
{
    char path[64], buf[512];
    FILE *f;

    if (kill(pid, 0) && errno == ESRCH)
        return 1;
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    if (!(f = fopen(path, "r")))
        return 1;
    int zombie = 0;
    if (fgets(buf, sizeof buf, f)) {
        char *p = strrchr(buf, ')');
        zombie = p && p[1] == ' ' && p[2] == 'Z';
    }
    fclose(f);
    return zombie;
}

/* stop: SHUTDOWN, then wait until the master is gone. */
static int cmd_stop(conn *c, int now, int wait_s)
{
    reply *r = checked(call_v(c, "STATUS", NULL));
    pid_t pid = (pid_t)num(r, "pid");
    time_t deadline = time(NULL) + wait_s;

    reply_free(r);
    reply_free(checked(call_v(c, "SHUTDOWN", now ? "NOW" : NULL, NULL)));
    while (time(NULL) <= deadline) {
        struct timespec ts = { 0, STOP_POLL_MS * NS_PER_MS };
        if (exited(pid)) {
            if (json)
                printf("{\"stopped\":true,\"pid\":%d}\n", (int)pid);
            else
                printf("larder-server (pid %d) stopped\n", (int)pid);
            return LCTL_EXIT_OK;
        }
        nanosleep(&ts, NULL);
    }
    fail(LCTL_EXIT_FAILED, "larder-server (pid %d) still runs after %d s",
         (int)pid, wait_s);
}

/* ---- finding the socket ---- */

/* Read `dir` and `admin-socket` from a config file (the last of each
 * wins, as the server reads it). 0 if the file was read. */
static int from_config(const char *file, char *dir, char *sock, size_t size)
{
    FILE *f = fopen(file, "r");
    char buf[LINE_MAX_];

    if (!f)
        return -1;
    while (fgets(buf, sizeof buf, f)) {
        char key[LINE_MAX_], val[LINE_MAX_];
        char *p = buf;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '#' || sscanf(p, "%s %s", key, val) != 2)
            continue;
        size_t n = strlen(val);
        if (n >= 2 && (val[0] == '"' || val[0] == '\'') &&
            val[n - 1] == val[0]) {
            val[n - 1] = '\0';
            memmove(val, val + 1, n - 1);
        }
        if (!strcasecmp(key, "dir"))
            snprintf(dir, size, "%s", val);
        else if (!strcasecmp(key, "admin-socket"))
            snprintf(sock, size, "%s", val);
    }
    fclose(f);
    return 0;
}

static void find_socket(const char *opt_socket, const char *opt_config,
                        char *out, size_t size)
{
    char dir[PATH_MAX_] = DEFAULT_DIR, sock[PATH_MAX_] = DEFAULT_SOCKET;
    const char *env = getenv("LARDER_ADMIN_SOCKET");
    const char *conf = opt_config ? opt_config : LARDERCTL_CONFIG;

    if (opt_socket) {
        snprintf(out, size, "%s", opt_socket);
        return;
    }
    if (env && *env && !opt_config) {
        snprintf(out, size, "%s", env);
        return;
    }
    if (from_config(conf, dir, sock, sizeof dir) && opt_config)
        fail(LCTL_EXIT_USAGE, "can't read %s: %s", opt_config, strerror(errno));
    if (sock[0] == '/')
        snprintf(out, size, "%s", sock);
    else if ((size_t)snprintf(out, size, "%.*s/%.*s", PATH_MAX_ / 2, dir,
                              PATH_MAX_ / 2 - 2, sock) >= size)
        fail(LCTL_EXIT_USAGE, "the admin socket's path is too long");
}

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: %s [-s SOCKET | -c CONFIG] [--json] COMMAND [ARGS]\n"
            "\n"
            "Commands:\n"
            "  status                   every process: role, pid, state, "
            "uptime, clients,\n"
            "                           commands, memory, respawns, last "
            "exit\n"
            "  workers [N]              the worker count, or grow/shrink "
            "the pool to N\n"
            "  reload                   re-read the config file; lists "
            "what needs a restart\n"
            "  backup FILE [--no-wait]  hot, consistent, compacted copy of "
            "the data\n"
            "  stop [--now] [--timeout S]  shut the server down and wait "
            "for it\n"
            "  cache [stats|flush]      the shared cache's counters, or "
            "empty it\n"
            "  config get PATTERN...    as CONFIG GET\n"
            "  config set NAME VALUE... as CONFIG SET (all or nothing)\n"
            "  config rewrite           as CONFIG REWRITE\n"
            "  loglevel [LEVEL]         the log level, or set it\n"
            "  ping                     is the server there?\n"
            "\n"
            "The socket: -s SOCKET, else $LARDER_ADMIN_SOCKET, else dir and "
            "admin-socket\n"
            "of the config file (-c CONFIG, default %s).\n"
            "Exit status: 0 done, 1 refused or failed, 2 usage, 3 not "
            "running,\n"
            "4 permission denied, 5 connection broken.\n",
            progname, LARDERCTL_CONFIG);
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "socket", required_argument, NULL, 's' },
        { "config", required_argument, NULL, 'c' },
        { "json", no_argument, NULL, 'j' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    const char *opt_socket = NULL, *opt_config = NULL;
    char path[PATH_MAX_];
    conn *c = &ctl_conn;
    int o;

    atexit(ctl_conn_free);

    signal(SIGPIPE, SIG_IGN);
    while ((o = getopt_long(argc, argv, "+s:c:jhV", opts, NULL)) != -1) {
        switch (o) {
        case 's': opt_socket = optarg; break;
        case 'c': opt_config = optarg; break;
        case 'j': json = 1; break;
        case 'h': usage(stdout); return LCTL_EXIT_OK;
        case 'V': printf("larderctl %s\n", LARDERCTL_VERSION); return 0;
        default: usage(stderr); return LCTL_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return LCTL_EXIT_USAGE;
    }
    const char *cmd = argv[optind];
    char **args = argv + optind + 1;
    int nargs = argc - optind - 1;
    find_socket(opt_socket, opt_config, path, sizeof path);

    if (!strcmp(cmd, "status") && nargs == 0) {
        conn_must_open(c, path);
        return cmd_status(c);
    }
    if (!strcmp(cmd, "ping") && nargs == 0) {
        conn_must_open(c, path);
        return simple(c, 1, (const char *const[]){ "PING" });
    }
    if (!strcmp(cmd, "workers") && nargs <= 1) {
        char *end;
        if (nargs == 1 && (strtol(args[0], &end, 10) <= 0 || *end))
            fail(LCTL_EXIT_USAGE, "workers: '%s' is not a positive count",
                 args[0]);
        conn_must_open(c, path);
        return simple(c, 1 + nargs,
                      (const char *const[]){ "WORKERS", args[0] });
    }
    if (!strcmp(cmd, "reload") && nargs == 0) {
        conn_must_open(c, path);
        return simple(c, 1, (const char *const[]){ "RELOAD" });
    }
    if (!strcmp(cmd, "backup") && (nargs == 1 || nargs == 2)) {
        int wait = nargs == 1;
        if (nargs == 2 && strcmp(args[1], "--no-wait"))
            fail(LCTL_EXIT_USAGE, "backup: unknown option '%s'", args[1]);
        conn_must_open(c, path);
        return cmd_backup(c, args[0], wait);
    }
    if (!strcmp(cmd, "stop")) {
        int now = 0, wait_s = STOP_WAIT_S;
        for (int i = 0; i < nargs; i++) {
            if (!strcmp(args[i], "--now"))
                now = 1;
            else if (!strcmp(args[i], "--timeout") && i + 1 < nargs)
                wait_s = atoi(args[++i]);
            else
                fail(LCTL_EXIT_USAGE, "stop: unknown option '%s'", args[i]);
        }
        conn_must_open(c, path);
        return cmd_stop(c, now, wait_s);
    }
    if (!strcmp(cmd, "cache") && nargs <= 1) {
        const char *sub = nargs ? args[0] : "stats";
        if (strcasecmp(sub, "stats") && strcasecmp(sub, "flush"))
            fail(LCTL_EXIT_USAGE, "cache: stats or flush, not '%s'", sub);
        conn_must_open(c, path);
        return simple(c, 2, (const char *const[]){ "CACHE", sub });
    }
    if (!strcmp(cmd, "loglevel") && nargs <= 1) {
        conn_must_open(c, path);
        return simple(c, 1 + nargs,
                      (const char *const[]){ "LOGLEVEL", args[0] });
    }
    if (!strcmp(cmd, "config") && nargs >= 1) {
        const char *sub = args[0];
        if (!((!strcasecmp(sub, "get") && nargs >= 2) ||
              (!strcasecmp(sub, "set") && nargs >= 3 && nargs % 2 == 1) ||
              (!strcasecmp(sub, "rewrite") && nargs == 1)))
            fail(LCTL_EXIT_USAGE, "config get PATTERN... | config set NAME "
                                  "VALUE... | config rewrite");
        const char **v = xcalloc((size_t)nargs + 1, sizeof *v);
        v[0] = "CONFIG";
        for (int i = 0; i < nargs; i++)
            v[i + 1] = args[i];
        conn_must_open(c, path);
        int rc = simple(c, nargs + 1, v);
        free(v);
        return rc;
    }
    fprintf(stderr, "%s: unknown command or wrong arguments: %s\n", progname,
            cmd);
    usage(stderr);
    return LCTL_EXIT_USAGE;
}
