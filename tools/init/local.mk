# tools/init/: what `make install` puts beside the programs: the default
# config ($(sysconfdir)/larder/larder.conf; a copy already there and
# edited is kept, the new one goes beside it as larder.conf.default), the
# SysV script ($(sysconfdir)/init.d/larder) and the systemd unit
# ($(systemdsystemunitdir)/larder.service). Their paths are filled in as
# they are installed, so `make install prefix=DIR` gives files that name
# DIR.
EXTRA_DIST += tools/init/larder.conf.in tools/init/larder.service.in \
	tools/init/larder.init.in
# issue 15's map and A/B tools ship in the tarball too.
EXTRA_DIST += ARCHITECTURE.md tools/larder_ab tools/proxy_ab \
	tools/hotpath_callgrind

LARDER_INIT_SUBST = sed \
	-e 's|@bindir[@]|$(bindir)|g' \
	-e 's|@sysconfdir[@]|$(sysconfdir)|g' \
	-e 's|@localstatedir[@]|$(localstatedir)|g' \
	-e 's|@runstatedir[@]|$(runstatedir)|g' \
	-e 's|@systemdsystemunitdir[@]|$(systemdsystemunitdir)|g'

LARDER_CONF_DIR = $(DESTDIR)$(sysconfdir)/larder
LARDER_INIT_DIR = $(DESTDIR)$(sysconfdir)/init.d
LARDER_UNIT_DIR = $(DESTDIR)$(systemdsystemunitdir)

install-data-local: install-larder-init
install-larder-init:
	$(MKDIR_P) $(LARDER_CONF_DIR) $(LARDER_INIT_DIR) $(LARDER_UNIT_DIR)
	$(LARDER_INIT_SUBST) $(srcdir)/tools/init/larder.conf.in > larder.conf.inst
	if test -f $(LARDER_CONF_DIR)/larder.conf && \
	   ! cmp -s larder.conf.inst $(LARDER_CONF_DIR)/larder.conf; then \
	  $(INSTALL_DATA) larder.conf.inst $(LARDER_CONF_DIR)/larder.conf.default; \
	else \
	  $(INSTALL_DATA) larder.conf.inst $(LARDER_CONF_DIR)/larder.conf; \
	fi
	$(LARDER_INIT_SUBST) $(srcdir)/tools/init/larder.init.in > larder.init.inst
	$(INSTALL_SCRIPT) larder.init.inst $(LARDER_INIT_DIR)/larder
	$(LARDER_INIT_SUBST) $(srcdir)/tools/init/larder.service.in > larder.service.inst
	$(INSTALL_DATA) larder.service.inst $(LARDER_UNIT_DIR)/larder.service
	rm -f larder.conf.inst larder.init.inst larder.service.inst

uninstall-local:
	$(LARDER_INIT_SUBST) $(srcdir)/tools/init/larder.conf.in > larder.conf.inst
	if cmp -s larder.conf.inst $(LARDER_CONF_DIR)/larder.conf; then \
	  rm -f $(LARDER_CONF_DIR)/larder.conf; fi
	rm -f larder.conf.inst $(LARDER_CONF_DIR)/larder.conf.default \
	  $(LARDER_INIT_DIR)/larder $(LARDER_UNIT_DIR)/larder.service
