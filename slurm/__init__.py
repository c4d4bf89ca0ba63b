"""Slurm knowledge: hostlists, the job environment, and building and submitting jobs. No torch."""
