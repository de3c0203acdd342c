# t/: unit tests (Check), integration tests (real server), fuzz targets.
include t/unit/local.mk
include t/integ/local.mk
include t/fuzz/local.mk
include t/fault/local.mk
