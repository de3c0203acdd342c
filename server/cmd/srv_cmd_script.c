/*
 * srv_cmd_script.c - the scripting family's handlers: EVAL, EVALSHA and
 * their _RO forms, FCALL, FCALL_RO, SCRIPT and FUNCTION subcommands. Thin
 * wrappers: the work is srv_script.c's (scripts, runs) and
 * srv_script_fn.c's (function libraries).
 */
#include "server/cmd/srv_cmd.h"
#include "server/cmd/srv_script.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"

void srv_cmd_eval(srv_conn *c) { srv_script_eval(c, 0, 0); }
void srv_cmd_evalsha(srv_conn *c) { srv_script_eval(c, 1, 0); }
void srv_cmd_eval_ro(srv_conn *c) { srv_script_eval(c, 0, 1); }
void srv_cmd_evalsha_ro(srv_conn *c) { srv_script_eval(c, 1, 1); }
void srv_cmd_fcall(srv_conn *c) { srv_script_fcall(c, 0); }
void srv_cmd_fcall_ro(srv_conn *c) { srv_script_fcall(c, 1); }

void srv_cmd_script_load(srv_conn *c) { srv_script_load(c); }
void srv_cmd_script_exists(srv_conn *c) { srv_script_exists(c); }
void srv_cmd_script_flush(srv_conn *c) { srv_script_flush(c); }
void srv_cmd_script_kill(srv_conn *c) { srv_script_kill(c, 0); }

/* SCRIPT DEBUG: Lua's debugger (LDB) is not there; NO is what runs. */
void srv_cmd_script_debug(srv_conn *c)
{
    const srv_slice *a = &c->argv[2];

    if (srv_util_streq(a->ptr, a->len, "no"))
        srv_reply_ok(c);
    else if (srv_util_streq(a->ptr, a->len, "yes") ||
             srv_util_streq(a->ptr, a->len, "sync"))
        srv_reply_error(c, "ERR SCRIPT DEBUG (the Lua debugger) is not "
                           "supported by this server");
    else
        srv_reply_error(c, "ERR Use SCRIPT DEBUG YES/SYNC/NO");
}

void srv_cmd_script_help(srv_conn *c)
{
    static const char *const help[] = {
        "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "DEBUG (YES|SYNC|NO)",
        "    Set the debug mode for subsequent scripts executed.",
        "EXISTS <sha1> [<sha1> ...]",
        "    Return information about the existence of the scripts in the "
        "script cache.",
        "FLUSH [ASYNC|SYNC]",
        "    Flush the Lua scripts cache. Very dangerous on replicas.",
        "    When called without the optional mode argument, the behavior is "
        "determined by the",
        "    lazyfree-lazy-user-flush configuration directive. Valid modes "
        "are:",
        "    * ASYNC: Asynchronously flush the scripts cache.",
        "    * SYNC: Synchronously flush the scripts cache.",
        "KILL",
        "    Kill the currently executing Lua script.",
        "LOAD <script>",
        "    Load a script into the scripts cache without executing it.",
        "HELP",
        "    Prints this help.",
    };
    srv_reply_lines(c, help, sizeof help / sizeof help[0]);
}

void srv_cmd_function_load(srv_conn *c) { srv_script_function_load(c); }
void srv_cmd_function_delete(srv_conn *c) { srv_script_function_delete(c); }
void srv_cmd_function_flush(srv_conn *c) { srv_script_function_flush(c); }
void srv_cmd_function_list(srv_conn *c) { srv_script_function_list(c); }
void srv_cmd_function_stats(srv_conn *c) { srv_script_function_stats(c); }
void srv_cmd_function_dump(srv_conn *c) { srv_script_function_dump(c); }
void srv_cmd_function_restore(srv_conn *c) { srv_script_function_restore(c); }
void srv_cmd_function_kill(srv_conn *c) { srv_script_kill(c, 1); }

void srv_cmd_function_help(srv_conn *c)
{
    static const char *const help[] = {
        "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "LOAD [REPLACE] <FUNCTION CODE>",
        "    Create a new library with the given library name and code.",
        "DELETE <LIBRARY NAME>",
        "    Delete the given library.",
        "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
        "    Return general information on all the libraries:",
        "    * Library name",
        "    * The engine used to run the Library",
        "    * Library description",
        "    * Functions list",
        "    * Library code (if WITHCODE is given)",
        "    It also possible to get only function that matches a pattern "
        "using LIBRARYNAME argument.",
        "STATS",
        "    Return information about the current function running:",
        "    * Function name",
        "    * Command used to run the function",
        "    * Duration in MS that the function is running",
        "    If no function is running, return nil",
        "    In addition, returns a list of available engines.",
        "KILL",
        "    Kill the current running function.",
        "FLUSH [ASYNC|SYNC]",
        "    Delete all the libraries.",
        "    When called without the optional mode argument, the behavior is "
        "determined by the",
        "    lazyfree-lazy-user-flush configuration directive. Valid modes "
        "are:",
        "    * ASYNC: Asynchronously flush the libraries.",
        "    * SYNC: Synchronously flush the libraries.",
        "DUMP",
        "    Return a serialized payload representing the current libraries, "
        "can be restored using FUNCTION RESTORE command",
        "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
        "    Restore the libraries represented by the given payload, it is "
        "possible to give a restore policy to",
        "    control how to handle existing libraries (default APPEND):",
        "    * FLUSH: delete all existing libraries.",
        "    * APPEND: appends the restored libraries to the existing "
        "libraries. On collision, abort.",
        "    * REPLACE: appends the restored libraries to the existing "
        "libraries, On collision, replace the old",
        "      libraries with the new libraries (notice that even on this "
        "option there is a chance of failure",
        "      in case of functions name collision with another library).",
        "HELP",
        "    Prints this help.",
    };
    srv_reply_lines(c, help, sizeof help / sizeof help[0]);
}
