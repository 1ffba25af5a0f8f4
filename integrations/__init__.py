"""One module per job kind: job <-> Workload translation, suspend/resume, remote sync rules."""
