"""Fabric evidence: which transport NCCL really used (its own debug log, per rank) and the kernel's view of
every RDMA port (sysfs, per node, at the start and the end of the job), judged per host. Plain Python:
nothing here imports torch."""
