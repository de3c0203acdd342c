# t/integ/local.mk: filled by its module.
