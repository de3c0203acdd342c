/*
 * srv_daemon.c - daemonizing, the pidfile, the supervisor's protocol.
 */
#include "server/srv_daemon.h"
#include "server/srv_log.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define READY_BYTE 'R'
#define PID_TEXT_MAX 32

/* The pipe to a parent waiting for srv_daemon_ready; -1 if none. */
static int ready_fd = -1;
static int ready_done;

int srv_daemon_detach(void)
{
    int p[2];
    pid_t pid;
    char b;

    if (pipe2(p, O_CLOEXEC))
        return -1;
    if ((pid = fork()) < 0)
        return -1;
    if (pid > 0) {
        /* The parent: ready, or the child died before it said so. */
        close(p[1]);
        ssize_t n;
        while ((n = read(p[0], &b, 1)) < 0 && errno == EINTR)
            ;
        _exit(n == 1 && b == READY_BYTE ? 0 : 1);
    }
    close(p[0]);
    ready_fd = p[1];
    setsid();
    return 0;
}

int srv_daemon_supervision(const srv_config *cfg)
{
    if (cfg->supervised != SRV_SUPERVISED_AUTO)
        return (int)cfg->supervised;
    if (getenv("NOTIFY_SOCKET"))
        return SRV_SUPERVISED_SYSTEMD;
    if (getenv("UPSTART_JOB"))
        return SRV_SUPERVISED_UPSTART;
    return SRV_SUPERVISED_NO;
}

int srv_daemon_notify(const srv_config *cfg, const char *state)
{
    const char *path = getenv("NOTIFY_SOCKET");
    struct sockaddr_un sa;
    size_t len;
    int fd, rc = 0;

    if (srv_daemon_supervision(cfg) != SRV_SUPERVISED_SYSTEMD || !path ||
        (path[0] != '/' && path[0] != '@') ||
        (len = strlen(path)) >= sizeof sa.sun_path)
        return 0;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    memcpy(sa.sun_path, path, len);
    if (sa.sun_path[0] == '@')
        sa.sun_path[0] = '\0'; /* an abstract address */
    if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0) {
        srv_log(SRV_LOG_WARNING, errno, "socket() for sd_notify failed");
        return -1;
    }
    if (sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa,
               (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) < 0) {
        srv_log(SRV_LOG_WARNING, errno, "sd_notify sendto(%s) failed", path);
        rc = -1;
    }
    close(fd);
    return rc;
}

void srv_daemon_ready(const srv_config *cfg, const char *status)
{
    char msg[SRV_CONFIG_ERR_SIZE];

    if (ready_done)
        return;
    ready_done = 1;
    snprintf(msg, sizeof msg, "READY=1\nSTATUS=%s\nMAINPID=%d", status,
             (int)getpid());
    srv_daemon_notify(cfg, msg);
    if (srv_daemon_supervision(cfg) == SRV_SUPERVISED_UPSTART)
        raise(SIGSTOP); /* upstart's "expect stop" */
    if (ready_fd < 0)
        return;
    char b = READY_BYTE;
    if (write(ready_fd, &b, 1) < 0) {
        /* the parent is gone: nobody to tell */
    }
    close(ready_fd);
    ready_fd = -1;
}

void srv_daemon_quiet(void)
{
    int null;

    if (ready_fd < 0)
        return; /* not daemonized */
    if ((null = open("/dev/null", O_RDWR | O_CLOEXEC)) >= 0) {
        dup2(null, STDIN_FILENO);
        dup2(null, STDOUT_FILENO);
        dup2(null, STDERR_FILENO);
        if (null > STDERR_FILENO)
            close(null);
    }
}

int srv_daemon_pidfile_write(const srv_config *cfg)
{
    char text[PID_TEXT_MAX];
    int fd, n;

    if (!cfg->pidfile[0])
        return 0;
    n = snprintf(text, sizeof text, "%d\n", (int)getpid());
    fd = open(cfg->pidfile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, text, (size_t)n) != n) {
        srv_log(SRV_LOG_WARNING, errno, "Failed to write PID file %s",
                cfg->pidfile);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    return 0;
}

void srv_daemon_pidfile_remove(const srv_config *cfg)
{
    char text[PID_TEXT_MAX] = "";
    FILE *f;

    if (!cfg->pidfile[0] || !(f = fopen(cfg->pidfile, "r")))
        return;
    if (!fgets(text, sizeof text, f))
        text[0] = '\0';
    fclose(f);
    if (atoi(text) == (int)getpid())
        unlink(cfg->pidfile);
}
