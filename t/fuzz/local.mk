# t/fuzz/local.mk: filled by its module.
