# t/fault/: fsync-aware fault injection (power-cut images) for crash tests.
