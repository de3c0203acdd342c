# tools/larderctl/: larderctl, the admin socket's client (installed
# beside larder-server; its man page is doc/larderctl.1).
bin_PROGRAMS += larderctl
larderctl_SOURCES = tools/larderctl/larderctl.c
larderctl_CPPFLAGS = $(AM_CPPFLAGS) \
	-DLARDERCTL_CONFIG='"$(sysconfdir)/larder/larder.conf"' \
	-DLARDERCTL_VERSION='"$(PACKAGE_VERSION)"'
