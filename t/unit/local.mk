# t/unit/local.mk: filled by its module.
