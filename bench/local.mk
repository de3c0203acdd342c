# bench/local.mk: filled by its module.
