# doc/: the man pages make install puts in $(mandir)/man1.
dist_man1_MANS = doc/larder-server.1 doc/larderctl.1 doc/larder-bench.1
