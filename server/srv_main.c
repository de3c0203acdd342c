/*
 * srv_main.c - entry point of larder-server.
 */
#include "server/srv_master.h"

int main(int argc, char **argv) { return srv_master_main(argc, argv); }
