"""Checks that tools which read INFO and CONFIG start on larder: redis-py (Debian's python3-redis, run by the system's python3) goes through its test suite's INFO-driven start-up (redis_version, arch_bits, cluster_enabled, the DPING probe) and parses INFO all, commandstats, latencystats, CONFIG GET *, SLOWLOG and LATENCY; bundis's CONFIG probes (CONFIG SET appendonly yes and the like) get Redis's answers; what redis_exporter and Datadog's Redis check read from INFO is there, each field compared with a redis-server's."""

import os
import re
import shutil
import subprocess

from larder_test import (Server, Skip, assert_eq, assert_true, larder_only,
                         main)

SYSTEM_PYTHON = '/usr/bin/python3'

# What redis-py's test suite does before any test (its conftest's
# session start), then the replies it must be able to parse.
REDIS_PY = r'''
import sys, redis
r = redis.Redis(host="127.0.0.1", port=int(sys.argv[1]), db=9)
info = r.info()
try:
    r.execute_command("DPING")
    info["enterprise"] = True
except redis.ResponseError:
    info["enterprise"] = False
assert isinstance(info["redis_version"], str), info["redis_version"]
assert tuple(int(x) for x in info["redis_version"].split(".")) >= (7, 0, 0)
assert info["arch_bits"] == 64, info["arch_bits"]
assert info["cluster_enabled"] == 0 and not bool(info["cluster_enabled"])
assert info["enterprise"] is False
assert info["redis_mode"] == "standalone"
assert info["role"] == "master"
r.flushdb()
r.set("k", "v")
r.get("k")
r.get("nosuch")
try:
    r.execute_command("NOSUCH")
except redis.ResponseError:
    pass
full = r.info("all")
assert full["cmdstat_set"]["calls"] >= 1, full["cmdstat_set"]
assert "usec_per_call" in full["cmdstat_get"]
err = full["errorstat_ERR"]
# redis-py 4 parses "count=2" (no comma) as text, later ones as a dict
assert (err["count"] if isinstance(err, dict) else int(err.split("=")[1])) >= 2, err
lat = r.info("latencystats")
assert "p50" in lat["latency_percentiles_usec_get"], lat
assert r.info("keyspace")["db9"]["keys"] == 1
everything = r.info("everything")
for section in ("used_memory", "connected_clients", "total_commands_processed",
                "used_cpu_sys", "aof_enabled", "keyspace_hits"):
    assert section in everything, section
cfg = r.config_get("*")
assert cfg["maxmemory"] == "0" and cfg["appendonly"] in ("yes", "no"), cfg
assert r.config_set("appendonly", "yes")
assert r.config_get("appendonly") == {"appendonly": "yes"}
r.config_set("slowlog-log-slower-than", 0)
r.ping()
log = r.slowlog_get(5)
assert log and "command" in log[0] or "duration" in log[0], log
assert r.slowlog_len() >= 1
r.config_set("slowlog-log-slower-than", 10000)
assert r.slowlog_reset()
r.execute_command("LATENCY", "LATEST")
r.config_resetstat()
assert r.info("stats")["total_error_replies"] == 0
r.flushdb()
print("redis-py start-up ok")
'''


def test_redis_py_start_up():
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        raise Skip('no system python3')
    probe = subprocess.run([SYSTEM_PYTHON, '-c', 'import redis'],
                           stderr=subprocess.DEVNULL)
    if probe.returncode:
        raise Skip('redis-py missing (apt-get install python3-redis)')
    with Server(workers=2) as s:
        p = subprocess.run([SYSTEM_PYTHON, '-c', REDIS_PY, str(s.port)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=120)
        assert_eq(p.returncode, 0, 'redis-py: %s' % p.stderr.decode()[-3000:])
        assert_true(b'redis-py start-up ok' in p.stdout, p.stdout)


# bundis's contract tests probe CONFIG with these (and expect Redis's
# answers).
BUNDIS_PROBES = [
    ('CONFIG', 'SET', 'appendonly', 'yes'),
    ('CONFIG', 'GET', 'appendonly'),
    ('CONFIG', 'SET', 'appendfsync', 'everysec'),
    ('CONFIG', 'GET', 'appendfsync'),
    ('CONFIG', 'SET', 'save', ''),
    ('CONFIG', 'GET', 'save'),
    ('CONFIG', 'SET', 'maxmemory-policy', 'allkeys-lru'),
    ('CONFIG', 'GET', 'maxmemory-policy'),
    ('CONFIG', 'SET', 'notify-keyspace-events', 'KEA'),
    ('CONFIG', 'GET', 'notify-keyspace-events'),
    ('CONFIG', 'SET', 'notify-keyspace-events', ''),
    ('CONFIG', 'SET', 'hz', '100'),
    ('CONFIG', 'GET', 'hz'),
    ('CONFIG', 'SET', 'hz', '10'),
    ('CONFIG', 'SET', 'lazyfree-lazy-user-del', 'yes'),
    ('CONFIG', 'GET', 'lazyfree-lazy-user-del'),
    ('CONFIG', 'SET', 'appendonly', 'maybe'),
    ('CONFIG', 'SET', 'no-such-param', '1'),
    ('CONFIG', 'GET', 'databases'),
    ('CONFIG', 'SET', 'maxmemory-policy', 'noeviction'),
]


class RedisPeer(Server):
    def command_line(self):
        return ['redis-server', '--port', str(self.port), '--save', '',
                '--appendonly', 'no', '--dir', self.dir, '--logfile',
                self.logfile]


def test_bundis_config_probes_like_redis():
    larder_only()
    if not shutil.which('redis-server'):
        raise Skip('redis-server not installed')
    with RedisPeer() as r, Server() as s:
        with r.client() as rc, s.client() as lc:
            for args in BUNDIS_PROBES:
                assert_eq(lc.call(*args), rc.call(*args), ' '.join(args))


# What redis_exporter and Datadog's Redis check read from INFO (by their
# names), beyond the generated cmdstat_, errorstat_, latency_ and db lines.
EXPORTER_FIELDS = '''
redis_version redis_mode os arch_bits process_id tcp_port uptime_in_seconds
connected_clients blocked_clients maxclients tracking_clients
client_recent_max_input_buffer client_recent_max_output_buffer
used_memory used_memory_rss used_memory_peak used_memory_lua
used_memory_scripts used_memory_overhead used_memory_startup
used_memory_dataset total_system_memory maxmemory maxmemory_policy
mem_fragmentation_ratio mem_fragmentation_bytes mem_clients_normal
mem_not_counted_for_evict allocator_active allocator_allocated
allocator_resident lazyfree_pending_objects loading
rdb_changes_since_last_save rdb_bgsave_in_progress rdb_last_save_time
rdb_last_bgsave_status rdb_last_bgsave_time_sec rdb_current_bgsave_time_sec
aof_enabled aof_rewrite_in_progress aof_rewrite_scheduled
aof_last_rewrite_time_sec aof_current_rewrite_time_sec
aof_last_bgrewrite_status aof_last_write_status
total_connections_received total_commands_processed
instantaneous_ops_per_sec total_net_input_bytes total_net_output_bytes
instantaneous_input_kbps instantaneous_output_kbps rejected_connections
sync_full sync_partial_ok sync_partial_err expired_keys evicted_keys
keyspace_hits keyspace_misses pubsub_channels pubsub_patterns
latest_fork_usec migrate_cached_sockets total_error_replies
role connected_slaves master_repl_offset repl_backlog_active
repl_backlog_size used_cpu_sys used_cpu_user used_cpu_sys_children
used_cpu_user_children cluster_enabled
'''.split()


def info_fields(c, section='everything'):
    out = {}
    for line in c.call('INFO', section).decode().split('\r\n'):
        if line and not line.startswith('#'):
            k, _, v = line.partition(':')
            out[k] = v
    return out


def test_info_has_what_exporters_read():
    larder_only()
    if not shutil.which('redis-server'):
        raise Skip('redis-server not installed')
    with RedisPeer() as r, Server(workers=2) as s:
        with r.client() as rc, s.client() as lc:
            for c in (rc, lc):
                c.call('SET', 'a', 'b')
                c.call('GET', 'a')
                c.call('NOSUCH')
            want, got = info_fields(rc), info_fields(lc)
            for f in EXPORTER_FIELDS:
                assert_true(f in got, 'INFO lacks %s' % f)
            # Every field Redis 7.0 prints is there (but the jemalloc,
            # io-thread and replica-only ones Redis itself prints only in
            # some builds: none here), in the same section.
            missing = sorted(set(want) - set(got))
            assert_eq(missing, [], 'INFO fields of Redis that larder lacks')
            for section in ('server', 'clients', 'memory', 'persistence',
                            'stats', 'replication', 'cpu', 'modules',
                            'errorstats', 'cluster', 'keyspace',
                            'commandstats', 'latencystats'):
                ws = set(info_fields(rc, section)) - {'aof_current_size'}
                gs = set(info_fields(lc, section))
                assert_true(ws <= gs, 'section %s lacks %s'
                            % (section, sorted(ws - gs)))
            assert_eq(got['cluster_enabled'], '0')
            assert_true(re.match(r'calls=1,usec=\d+,usec_per_call=[\d.]+,'
                                 r'rejected_calls=0,failed_calls=0$',
                                 got['cmdstat_get']), got['cmdstat_get'])
            assert_eq(got['errorstat_ERR'], 'count=1')
            assert_true(re.match(r'p50=[\d.]+,p99=[\d.]+,p99\.9=[\d.]+$',
                                 got['latency_percentiles_usec_get']),
                        got['latency_percentiles_usec_get'])
            assert_true(got['db0'].startswith('keys=1,expires=0'), got['db0'])
            # Summed over the workers: a second connection, likely on the
            # other worker, adds to the same counters.
            before = int(info_fields(lc, 'stats')['total_commands_processed'])
            for _ in range(4):
                with s.client() as c2:
                    c2.call('PING')
            after = int(info_fields(lc, 'stats')['total_commands_processed'])
            assert_true(after >= before + 4, (before, after))
            # Default INFO: Redis's default sections, and larder's own.
            default = lc.call('INFO').decode()
            for title in ('Server', 'Clients', 'Memory', 'Persistence',
                          'Stats', 'Replication', 'CPU', 'Modules',
                          'Errorstats', 'Cluster', 'Keyspace', 'Cache',
                          'Processes'):
                assert_true('# %s\r\n' % title in default, title)
            assert_true('# Commandstats' not in default, 'not by default')


if __name__ == '__main__':
    main(globals())
