"""Checks scripting against a redis-server each test starts: a corpus of scripts (conversions both ways in RESP2 and RESP3, errors and their texts, the sandbox, cjson, cmsgpack, struct, bit, the redis library) and of SCRIPT / FUNCTION / FCALL commands must give the same replies, reply by reply."""

import shutil

from larder_test import (RespError, Server, Skip, assert_eq, assert_true,
                         larder_only, main, short)


class RedisPeer(Server):
    """redis-server as the reference, whatever LARDER_TEST_AGAINST says."""

    def command_line(self):
        return ['redis-server', '--port', str(self.port), '--save', '',
                '--appendonly', 'no', '--dir', self.dir,
                '--logfile', self.logfile]


def peer():
    larder_only()
    if not shutil.which('redis-server'):
        raise Skip('redis-server not installed')
    return RedisPeer()


def client(server, proto):
    c = server.client()
    if proto == 3:
        assert_true(not isinstance(c.hello(3), RespError), 'HELLO 3')
    return c


# Scripts run with EVAL <script> 0 (a tuple: the whole command).
SCRIPTS = [
    # Lua -> RESP
    'return 1', 'return -3.99', 'return 3.99', 'return 1e300', 'return 0/0',
    'return 9007199254740993', "return 'x' .. 1", 'return true',
    'return false', 'return nil', 'return', 'return 1, 2',
    "return {1, 2, 3.5, 'x', true, false, nil, 4}", "return {1, {2, {3}}}",
    "return {a=1}", "return {}", "return {err='oops'}", "return {ok='fine'}",
    "return {err='a', ok='b'}", "return {err=5}", "return {ok=5}",
    "return {err='line1\\nline2'}", "return {err=''}", "return {ok=''}",
    "return {map={a=1}}", "return {map={a={1,2}}}", "return {set={a=true}}",
    "return {double=3.5}", "return {double=1/0}", "return {double=-1/0}",
    "return {double=0/0}", "return {double='x'}", "return {big_number='123'}",
    "return {big_number=5}",
    "return {verbatim_string={format='txt', string='hi'}}",
    "return {verbatim_string={format='markdown', string='hi'}}",
    "redis.setresp(3) return true", "redis.setresp(3) return false",
    "redis.setresp(3) return {true, false, nil}",
    # RESP -> Lua
    "return redis.call('get', 'nokey')",
    "return type(redis.call('get', 'nokey'))",
    "redis.call('set', 'k', 'v') return redis.call('get', 'k')",
    "return redis.call('incr', 'cnt')", "return redis.call('ping')",
    "return type(redis.call('ping'))", "return redis.call('ping').ok",
    "redis.call('hset', 'h', 'a', '1') return redis.call('hgetall', 'h')",
    "return redis.call('hgetall', 'nohash')",
    "redis.call('rpush', 'l', 'a', 'b') return redis.call('lrange', 'l', 0, -1)",
    "redis.call('zadd', 'z', '1.5', 'x') return redis.call('zscore', 'z', 'x')",
    "redis.setresp(3) return redis.call('zscore', 'z', 'x')",
    "redis.setresp(3) return redis.call('zscore', 'z', 'x').double",
    "redis.setresp(3) return redis.call('zscore', 'z', 'nomember')",
    "redis.setresp(3) return redis.call('get', 'nokey')",
    "redis.setresp(3) return type(redis.call('get', 'nokey'))",
    "redis.setresp(3) return redis.call('hgetall', 'h')",
    "redis.setresp(3) return type(redis.call('hgetall', 'h').map)",
    "redis.setresp(3) return redis.call('hgetall', 'nohash')",
    "redis.call('sadd', 's', 'm') redis.setresp(3) "
    "return redis.call('smembers', 's')",
    "redis.setresp(3) return redis.call('smembers', 'nos')",
    "redis.setresp(3) return redis.call('exists', 'h')",
    "redis.setresp(3) return redis.call('ping')",
    "redis.setresp(3) return redis.call('set', 'x', '1', 'nx', 'get')",
    "redis.setresp(2) return redis.call('zscore', 'z', 'x')",
    "return redis.call('set', 'f', 3.5)", "return redis.call('get', 'f')",
    "redis.call('set', 'f', 1e20) return redis.call('get', 'f')",
    "redis.call('set', 'f', -0.1) return redis.call('get', 'f')",
    "redis.call('set', 'f', -0.0) return redis.call('get', 'f')",
    "redis.call('set', 'f', 2^53) return redis.call('get', 'f')",
    "redis.call('set', 'f', 2^53 + 2) return redis.call('get', 'f')",
    "redis.call('set', 'f', -2^63) return redis.call('get', 'f')",
    "redis.call('set', 'f', 123456789012) return redis.call('get', 'f')",
    "redis.call('set', 'f', 1/0) return redis.call('get', 'f')",
    "redis.call('set', 'f', 0/0) return redis.call('get', 'f')",
    "return redis.call('zrange', 'z', 0, -1, 'withscores')",
    "redis.setresp(3) return redis.call('zrange', 'z', 0, -1, 'withscores')",
    # errors
    'return x', 'x = 1', "rawset(_G, 'x', 1)", 'setmetatable(_G, nil)',
    'string.x = 1', "getmetatable('').__index.x = 1",
    "error({err='MY fail'})", 'error(123)', 'error()', "error('x', 0)",
    "error('boom')", "local function f() error('deep') end f()",
    "error({err='foo'})", "error({err='-foo bar'})", "error({err=5})",
    "error('ERR my thing', 0)", "error('WRONGTYPE my thing', 0)",
    "return redis.error_reply('My err')", "return redis.error_reply('Myerr')",
    "return redis.error_reply('-Myerr')", "return redis.error_reply('-')",
    "return redis.error_reply('')", "return redis.error_reply('a\\r\\nb c')",
    "return redis.error_reply({})", "return redis.error_reply()",
    "return redis.error_reply('a', 'b')", "return redis.status_reply('FINE')",
    "return redis.status_reply('a\\r\\nb')", "return redis.status_reply(5)",
    "return redis.status_reply()", "return redis.error_reply('x').err",
    "return redis.status_reply('x').ok",
    "error(redis.error_reply('FOO bar'))", "error(redis.error_reply('FOObar'))",
    "return redis.pcall('nosuch')", "return redis.call('nosuch')",
    "local ok, e = pcall(redis.call, 'nosuch') return e",
    "local ok, e = pcall(redis.call, 'nosuch') return type(e)",
    "local ok, e = pcall(redis.call, 'nosuch') error(e)",
    "local ok, e = pcall(redis.call, 'nosuch') error(e, 0)",
    "local r = redis.pcall('nosuch') return type(r)",
    "local r = redis.pcall('nosuch') error(r)",
    "local r = redis.pcall('nosuch') r.err = 'XX custom' return r",
    "local ok, e = pcall(redis.call, 'incr', 'bad', 'x') return e",
    "redis.call('set', 'str', 'abc') return redis.call('incr', 'str')",
    "redis.call('set', 'str', 'abc') return redis.pcall('incr', 'str')",
    "redis.call('set', 'str', 'abc') return redis.call('lpush', 'str', 'x')",
    "return redis.call('get', 'a', 'b')", 'return redis.call()',
    'return redis.call({})', "return redis.call('get', {})",
    "return redis.call('get', nil)", "return redis.call('set', 'f', true)",
    "return redis.sha1hex()", "return redis.sha1hex('abc')",
    "return redis.sha1hex(123)",
    'redis.setresp(4)', 'redis.setresp()', "redis.setresp('3')",
    "return redis.call('eval', 'return 1', '0')",
    "return redis.call('client', 'list')",
    "return redis.call('client', 'nosuch')",
    "return redis.call('config', 'get')",
    "return redis.call('multi')", "return redis.pcall('subscribe', 'c')",
    'return 1 +', 'local t = {}\nt.x.y = 1',
    'local function r(n) return r(n + 1) + 1 end return r(1)',
    "return redis.log(redis.LOG_WARNING)",
    "return redis.log('x', 'y')", "return redis.log(99, 'y')",
    "redis.log(redis.LOG_NOTICE, 'from', 'a', 'script') return 1",
    "return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, "
    "redis.LOG_WARNING}",
    "return {redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, "
    "redis.REPL_REPLICA, redis.REPL_ALL}",
    "return redis.set_repl()", "return redis.set_repl(99)",
    # shebang
    '#!lua\nreturn 1', '#!lua flags=no-writes\nreturn 1',
    "#!lua flags=no-writes\nreturn redis.call('set', 'k', 'v')",
    '#!lua flags=no-writes,allow-oom\nreturn 2', '#!lua flags=\nreturn 3',
    '#!lua flags=bad\nreturn 1', '#!luajit\nreturn 1',
    '#!lua foo=bar\nreturn 1', '#!lua', '#!lua\nreturn x',
    # sandbox and libraries
    "return type(os)", "return type(io)", "return type(require)",
    "return type(loadfile)", "return type(dofile)", "return type(print)",
    "return type(debug)", "return type(loadstring)", "return type(load)",
    "return type(coroutine)", "return type(unpack)", "return type(gcinfo)",
    "return _VERSION", "return type(_G)",
    "local t = {} for k, v in pairs(_G) do t[#t + 1] = k end "
    "table.sort(t) return t",
    "local n = 0 for k, v in pairs(string) do n = n + 1 end return n",
    "local t = {} for k in pairs(redis) do t[#t + 1] = k end "
    "table.sort(t) return #t > 10",
    "return loadstring('return 5')()", "loadstring('y = 5')()",
    "return ('abc'):upper()", "return string.format('%5.2f', 3.14159)",
    "return math.floor(7.9)", "return table.concat({1, 2, 3}, '-')",
    "return select('#', 1, 2, 3)", "return {unpack({1, 2, 3})}",
    "return tostring(tonumber('0x10'))",
    "return cjson.encode({1, 2, {a=1}})", "return cjson.decode('[1,2,3]')",
    "return cjson.encode(1.5)", "return cjson.encode(0.1)",
    "return cjson.encode({a='b'})", "return cjson.decode('{\"a\":[1,true]}').a",
    "return cjson.encode(cjson.decode('{\"x\":null}'))",
    "return cjson.decode('{bad')", "return cjson.encode(math.huge)",
    "return bit.band(0xff, 0x0f)", "return bit.tohex(255)",
    "return bit.bor(1, 2, 4)", "return bit.lshift(1, 40)",
    "return bit.bxor(5, 3)", "return bit.bnot(0)", "return bit.arshift(-8, 1)",
    "return cmsgpack.pack(string.rep('x', 40))",
    "return cmsgpack.pack(string.rep('y', 300))",
    "return cmsgpack.pack(1.5, 0.1, -1, -33, 200, 70000, 5000000000, "
    "-5000000000, true, false, nil)",
    "return cmsgpack.pack({1, 2, 3}, {a=1}, {})",
    "local t = {} local c = t for i = 1, 20 do c[1] = {} c = c[1] end "
    "return cmsgpack.pack(t)",
    "return {cmsgpack.unpack(cmsgpack.pack(1, 'a', {1, 2}, {x='y'}))}",
    "return cmsgpack.unpack(cmsgpack.pack({x='y'})).x",
    "return {cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3))}",
    "return {cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3), 2)}",
    "return {cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 2)}",
    "return {cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 5)}",
    "return cmsgpack.unpack(string.char(0xcd, 1))",
    "return cmsgpack.unpack(string.char(0xc1))", "return cmsgpack.pack()",
    "return {cmsgpack.unpack(cmsgpack.pack(-2^63, 2^53, -0.5, 1e300))}",
    "return struct.pack('>i2hBs', 258, -2, 255, 'ab')",
    "return {struct.unpack('>i2hBs', struct.pack('>i2hBs', 258, -2, 255, "
    "'ab'))}",
    "return struct.size('>i2hB!4d')", "return struct.pack('q', 1)",
    "return struct.size('s')", "return struct.unpack('>I4', 'ab')",
    "return {struct.unpack('<i8', struct.pack('<i8', -3))}",
    "return struct.pack('i17', 1)", "return struct.pack('c3', 'ab')",
    "return {struct.unpack('Bc0', struct.pack('Bc0', 3, 'xyz'))}",
    "return struct.pack('!d', 1.5)", "return struct.pack('b!4i', 1, 2)",
    "return {struct.unpack('f', struct.pack('f', 1.5))}",
    "return struct.pack('>I3', 0x010203)", "return struct.pack('<H', 65535)",
    "return {struct.unpack('b', string.char(255))}",
    "return {struct.unpack('>i3', string.char(255, 255, 254))}",
    "return {struct.unpack('xB', 'ab', 1)}", "return struct.pack('x')",
]

# Whole commands, in order (their state carries on).
COMMANDS = [
    ('EVAL', 'return {KEYS[1], ARGV[1], #KEYS, #ARGV}', 1, 'k', 'a'),
    ('EVAL', 'return 1', -1), ('EVAL', 'return 1', 2, 'a'),
    ('EVAL', 'return 1', 'x'), ('EVAL', 'return 1', '9223372036854775808'),
    ('EVAL', 'return 1', '-9223372036854775808'), ('EVAL', 'return 1'),
    ('EVALSHA', 'f' * 40, 0), ('EVALSHA', 'F' * 40, 0), ('EVALSHA', 'abc', 0),
    ('EVALSHA_RO', 'f' * 40, 0), ('SCRIPT', 'LOAD', 'return "loaded"'),
    ('EVALSHA', 'b534286061d4b9e4026607613b95c06c06015ae8', 0),
    ('SCRIPT', 'EXISTS', 'b534286061d4b9e4026607613b95c06c06015ae8', 'x'),
    ('SCRIPT', 'LOAD', 'return +'), ('SCRIPT', 'LOAD', '#!lua flags=x\n1'),
    ('SCRIPT', 'FLUSH', 'bad'), ('SCRIPT', 'FLUSH', 'ASYNC'),
    ('SCRIPT', 'FLUSH', 'SYNC'), ('SCRIPT', 'FLUSH', 'SYNC', 'x'),
    ('EVALSHA', 'b534286061d4b9e4026607613b95c06c06015ae8', 0),
    ('SCRIPT', 'KILL'), ('SCRIPT', 'DEBUG', 'maybe'), ('SCRIPT', 'DEBUG', 'no'),
    ('SCRIPT', 'NOSUCH'), ('SCRIPT', 'HELP'), ('SCRIPT',),
    ('EVAL_RO', "return redis.call('set', 'k', 'v')", 0),
    ('EVAL_RO', '#!lua\nreturn 1', 0),
    ('EVAL_RO', '#!lua flags=no-writes\nreturn 1', 0),
    ('FUNCTION', 'FLUSH'), ('FUNCTION', 'LIST'), ('FUNCTION', 'STATS'),
    ('FUNCTION', 'LOAD', "#!lua name=mylib\nredis.register_function('f1', "
     "function(keys, args) error('boom') end)"),
    ('FCALL', 'f1', 0), ('FCALL_RO', 'f1', 0), ('FCALL', 'nosuch', 0),
    ('FCALL', 'f1', -1), ('FCALL', 'f1', 'x'), ('FCALL', 'f1', 5),
    ('FUNCTION', 'LOAD', "#!lua name=mylib\nredis.register_function('g', "
     "function() return 1 end)"),
    ('FUNCTION', 'LOAD', 'REPLACE', "#!lua name=mylib\n"
     "redis.register_function('f2', function(keys, args) "
     "return redis.call('nosuch') end)\n"
     "redis.register_function('f3', function(keys, args) return x end)\n"
     "redis.register_function{function_name='f4', callback=function(keys, "
     "args) return {keys, args} end, flags={'no-writes'}}"),
    ('FCALL', 'f2', 0), ('FCALL', 'f3', 0), ('FCALL', 'f4', 2, 'a', 'b', 'c'),
    ('FCALL_RO', 'f4', 0), ('FCALL', 'f1', 0),
    ('FUNCTION', 'LOAD', "#!lua name=lib2\nredis.register_function('f2', "
     "function() return 2 end)"),
    ('FUNCTION', 'LOAD', "#!lua name=lib2\nredis.register_function('h', "
     "function() return 2 end)\nredis.register_function('h', function() "
     "return 3 end)"),
    ('FUNCTION', 'LOAD', '#!lua name=lib2\nreturn 1'),
    ('FUNCTION', 'LOAD', '#!lua name=lib-2\nreturn 1'),
    ('FUNCTION', 'LOAD', '#!lua\nreturn 1'),
    ('FUNCTION', 'LOAD', '#!lua name=x foo=bar\nreturn 1'),
    ('FUNCTION', 'LOAD', '#!js name=x\nreturn 1'),
    ('FUNCTION', 'LOAD', '#!lua name=x'), ('FUNCTION', 'LOAD', 'return 1'),
    ('FUNCTION', 'LOAD', "#!lua name=lib3\nredis.register_function("
     "'1bad-name', function() return 2 end)"),
    ('FUNCTION', 'LOAD', "#!lua name=lib3\nredis.call('ping')"),
    ('FUNCTION', 'LOAD', "#!lua name=lib3\nredis.register_function('ok', "
     "function() return redis.call('set', 'fk', '1') end)"),
    ('FCALL_RO', 'ok', 0), ('FCALL', 'ok', 0), ('GET', 'fk'),
    ('FUNCTION', 'DELETE', 'nosuch'), ('FUNCTION', 'DELETE', 'lib3'),
    ('FUNCTION', 'LIST', 'LIBRARYNAME', 'nomatch'),
    ('FUNCTION', 'LIST', 'LIBRARYNAME', 'lib*', 'WITHCODE'),
    ('FUNCTION', 'STATS'), ('FUNCTION', 'KILL'),
    ('FUNCTION', 'RESTORE', 'bogus'), ('FUNCTION', 'RESTORE', 'bogus', 'xx'),
    ('FUNCTION', 'FLUSH', 'xx'), ('FUNCTION', 'LIST', 'bad'),
    ('FUNCTION', 'LIST', 'LIBRARYNAME'),
    ('FUNCTION', 'LIST', 'WITHCODE', 'WITHCODE'),
    ('FUNCTION', 'LIST', 'LIBRARYNAME', 'a', 'LIBRARYNAME', 'b'),
    ('FUNCTION', 'LOAD', 'REPLACE'), ('FUNCTION', 'LOAD', 'foo', 'bar'),
    ('FUNCTION', 'HELP'), ('FUNCTION', 'NOSUCH'), ('FUNCTION', 'DELETE'),
    ('FUNCTION', 'FLUSH', 'ASYNC'), ('FUNCTION', 'LIST'),
    ('MULTI',), ('EVAL', "return redis.call('incr', 'm')", 0),
    ('EVAL', 'return 1', 'x'), ('EXEC',),
    ('MULTI',), ('EVAL', "return redis.call('incr', 'm')", 0), ('EXEC',),
    # XREAD / XREADGROUP with BLOCK are refused from scripts (at BLOCK,
    # before the timeout or the group is looked at), by the name as called
    ('EVAL', "return redis.call('XREAD', 'BLOCK', '0', 'STREAMS', 'xs', "
     "'$')", 0),
    ('EVAL', "return redis.pcall('xread', 'COUNT', '1', 'BLOCK', 'nan', "
     "'STREAMS', 'xs', '$')", 0),
    ('EVAL', "return redis.pcall('XREADGROUP', 'GROUP', 'g', 'c', 'BLOCK', "
     "'0', 'STREAMS', 'xs', '>')", 0),
    ('XGROUP', 'CREATE', 'xs', 'g', '$', 'MKSTREAM'),
    ('EVAL', "return redis.call('XREADGROUP', 'GROUP', 'g', 'c', 'BLOCK', "
     "'100', 'STREAMS', 'xs', '>')", 0),
    ('EVAL', "return redis.call('XREAD', 'COUNT', '1', 'STREAMS', 'xs', "
     "'0')", 0),
]


def norm(v):
    """Replies as comparable values (NaN equals NaN)."""
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, list):
        return [norm(x) for x in v]
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items()}
    return v


def compare(proto, items):
    with peer() as theirs, Server() as mine:
        a, b = client(mine, proto), client(theirs, proto)
        for i, item in enumerate(items):
            cmd = item if isinstance(item, tuple) else ('EVAL', item, 0)
            got, want = norm(a.call(*cmd)), norm(b.call(*cmd))
            assert_eq(got, want, 'RESP%d %s' % (proto, short(cmd, 200)))
        a.close()
        b.close()


def test_scripts_resp2():
    compare(2, SCRIPTS)


def test_scripts_resp3():
    compare(3, SCRIPTS)


def test_commands_resp2():
    compare(2, COMMANDS)


def test_commands_resp3():
    compare(3, COMMANDS)


def test_dump_restore_between_servers():
    lib = ("#!lua name=dumplib\nredis.register_function('dl', "
           "function(keys, args) return 'a long enough string for the lzf "
           "compression of redis to kick in, repeated repeated repeated' "
           "end)")
    with peer() as theirs, Server() as mine:
        a, b = mine.client(), theirs.client()
        for c in (a, b):
            assert_eq(c.call('FUNCTION', 'LOAD', lib), b'dumplib')
        from_mine, from_theirs = (a.call('FUNCTION', 'DUMP'),
                                  b.call('FUNCTION', 'DUMP'))
        for c in (a, b):
            c.call('FUNCTION', 'FLUSH')
        assert_eq(a.call('FUNCTION', 'RESTORE', from_theirs), 'OK')
        assert_eq(b.call('FUNCTION', 'RESTORE', from_mine), 'OK')
        assert_eq(a.call('FCALL', 'dl', 0), b.call('FCALL', 'dl', 0))
        assert_eq(a.call('FUNCTION', 'LIST', 'WITHCODE'),
                  b.call('FUNCTION', 'LIST', 'WITHCODE'))
        for pol in ('APPEND', 'REPLACE', 'FLUSH', 'bad'):
            assert_eq(a.call('FUNCTION', 'RESTORE', from_theirs, pol),
                      b.call('FUNCTION', 'RESTORE', from_mine, pol), pol)
        a.close()
        b.close()


if __name__ == '__main__':
    main(globals())
