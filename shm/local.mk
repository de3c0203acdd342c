# shm/local.mk: filled by its module.
